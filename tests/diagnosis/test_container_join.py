"""Inside a container NVML's pids are the host's: the engine is joined to its GPUs by the UUIDs its
environment names, the plan is drawn there, and neither a foreign process nor unattributed memory blames
someone else for the engine's own memory; a note says PID namespaces differ (issue 14, section 3)."""

from __future__ import annotations

from gpumem_tui.diagnosis.autoplan import engine_plans
from gpumem_tui.diagnosis.diagnose import diagnose
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.history import History
from gpumem_tui.models import MigInstance
from gpumem_tui.sources.placement import device_gpus, placed

from .build import engine, gpu, process, sample

UUID_0 = "GPU-00000000-0000-4000-8000-000000000000"
UUID_1 = "GPU-00000000-0001-4000-8000-000000000001"


def _container(memory_listed: bool = True):
    """Two cards as NVML sees them from the engine's container: host pids, none visible here; the engine
    is pid 1 here and its environment names GPU 1."""
    held = 70 if memory_listed else None
    return sample(
        gpus=[gpu(0, used_gib=18, uuid=UUID_0), gpu(1, used_gib=72, uuid=UUID_1)],
        processes=[
            process(812401, 18, 0, visible=False, note="pid 812401, not visible here"),
            process(812345, 0, 1, visible=False, note="pid 812345, not visible here").model_copy(
                update={"gpu_memory_bytes": None if held is None else round(held * 2**30)}
            ),
        ],
        engines=[engine(pids=(1,)).model_copy(update={"devices": [UUID_1]})],
    )


def _judge(catalog, s):
    history = History()
    history.add(s)
    plans = engine_plans(s, catalog, None)
    return plans, diagnose(plans, s, history, Thresholds())


def test_the_engine_is_placed_on_its_gpu_by_uuid_and_the_plan_drawn_there(catalog):
    joined = placed(_container())
    assert joined.engines[0].pids == [1, 812345]
    plans, findings = _judge(catalog, joined)
    assert plans[0].gpu_indices == [1]
    assert "foreign_process" not in {f.code for f in findings}
    [note] = [e for e in joined.errors if e.source == "host"]
    assert note.message.startswith("PID namespaces differ: NVML reports host pids, which this namespace cannot see")
    assert "placed on GPU 1 by the GPU UUIDs its environment names" in note.message
    assert "hostPID" in (note.hint or "")


def test_memory_nvml_puts_on_no_pid_is_not_blamed_on_a_container(catalog):
    _, findings = _judge(catalog, placed(_container(memory_listed=False)))
    [finding] = [f for f in findings if f.code == "unattributed_memory"]
    assert finding.gpu_index == 1 and finding.severity == "info"
    assert "PID namespaces differ" in finding.title
    assert "another PID namespace (a container)" not in finding.explanation
    assert "http://127.0.0.1:8000 is placed on this GPU by its UUID" in finding.explanation


def test_nothing_changes_where_pids_match_or_the_environment_says_nothing():
    same = _container().model_copy(
        update={"engines": [engine(pids=(812345,)).model_copy(update={"devices": [UUID_1]})]}
    )
    assert placed(same) is same
    silent = _container().model_copy(update={"engines": [engine(pids=(1,))]})
    assert placed(silent) is silent


def test_gpus_by_uuid_short_uuid_mig_or_index():
    mig = gpu(1, uuid=UUID_1, mig_enabled=True, mig_instances=[MigInstance(gpu_instance_id=1, uuid="MIG-aa-1")])
    cards = [gpu(0, uuid=UUID_0), mig]
    assert device_gpus([UUID_1], cards) == [1]
    assert device_gpus(["GPU-00000000-0001"], cards) == [1]  # CUDA takes a UUID's leading part
    assert device_gpus(["MIG-aa-1"], cards) == [1]
    assert device_gpus(["0", UUID_1], cards) == [0, 1]
    assert device_gpus(["GPU-ffff", "7", "GPU-"], cards) == []


def test_a_plan_is_drawn_where_nvml_does_not_say_what_the_engines_pids_hold(catalog):
    plans, _ = _judge(catalog, placed(_container(memory_listed=False)))
    assert plans[0].gpu_indices == [1]


def test_pid_namespaces_differ_is_said_with_what_to_do(catalog):
    _, findings = _judge(catalog, placed(_container()))
    [said] = [f for f in findings if f.code == "pid_namespaces_differ"]
    assert said.severity == "info" and "NVML reports host pids (812345, 812401)" in said.explanation
    assert "is pid 1 here; it is placed on GPU 1 by the GPU UUIDs its environment names" in said.explanation
    assert "hostPID: true" in said.try_this
    unplaced = _container().model_copy(update={"engines": [engine(pids=(1,))]})
    [said] = [f for f in _judge(catalog, unplaced)[1] if f.code == "pid_namespaces_differ"]
    assert "its environment names no GPU that NVML reports, so it is on no GPU here" in said.explanation


def test_on_the_host_nothing_is_said_of_namespaces(catalog):
    """The API server's pid is not NVML's (its EngineCore child holds the memory): that is no namespace."""
    host = sample(gpus=[gpu(0)], processes=[process(2101, 60, 0)], engines=[engine(pids=(2100, 2101))])
    assert "pid_namespaces_differ" not in {f.code for f in _judge(catalog, host)[1]}


def test_a_foreign_process_in_a_pod_is_named_with_its_pod(catalog):
    """On a Kubernetes node the one to ask is the pod's owner: check's explanation names the pod, literally."""
    procs = [process(2100, 60), process(3100, 8, name="python3", user="ana", pod="team-b/[red]x")]
    s = sample(gpus=[gpu(used_gib=68)], processes=procs, engines=[engine()])
    [finding] = [f for f in _judge(catalog, s)[1] if f.code == "foreign_process"]
    assert finding.explanation.startswith("pid 3100 (python3, user ana, pod team-b/[red]x) is not the engine")


def test_on_the_host_an_exited_pid_is_no_namespace_and_is_not_the_engines(catalog):
    """An engine not yet on NVML's list beside a pid that has just exited: one namespace, nothing placed."""
    host = sample(
        gpus=[gpu(0, used_gib=10, uuid=UUID_0)],
        processes=[process(3100, 2, 0), process(3200, 8, 0, visible=False)],
        engines=[engine(pids=(2100,)).model_copy(update={"devices": [UUID_0]})],
    )
    assert placed(host) is host
    assert "pid_namespaces_differ" not in {f.code for f in _judge(catalog, host)[1]}


def test_the_finding_names_the_pids_counted_as_the_engines(catalog):
    """The finding is what the TUI and check show: it says which of NVML's pids were taken as the engine's."""
    _, findings = _judge(catalog, placed(_container()))
    [finding] = [f for f in findings if f.code == "pid_namespaces_differ"]
    assert "NVML's pid 812345 there is counted as its own" in finding.explanation


def test_a_legacy_mig_selector_names_its_parent_card():
    """Drivers before R470 named MIG devices `MIG-GPU-<card's uuid>/<GI>/<CI>`, as CUDA still accepts."""
    cards = [gpu(0, used_gib=1, uuid=UUID_0), gpu(1, used_gib=1, uuid=UUID_1)]
    assert device_gpus([f"MIG-{UUID_1}/1/0"], cards) == [1]


def test_an_engine_whose_gpu_this_container_may_not_open_is_not_said_to_name_no_reported_gpu(catalog):
    """A Slurm job in a container: NVML counts GPU 1 but refuses its handle, so its UUID cannot be read here.
    The engine's environment names it: the finding says the GPU may be one not accessible from here, not that
    NVML reports no such GPU."""
    denied = gpu(1, accessible=False, memory_used_bytes=None, memory_total_bytes=None, memory_free_bytes=None)
    s = sample(
        gpus=[gpu(0, used_gib=18, uuid=UUID_0), denied],
        processes=[process(812401, 18, 0, visible=False, note="pid 812401, not visible here")],
        engines=[engine(pids=(1,)).model_copy(update={"devices": [UUID_1]})],
    )
    _, findings = _judge(catalog, placed(s))
    codes = {f.code for f in findings}
    assert {"pid_namespaces_differ", "gpu_not_accessible"} <= codes
    [finding] = [f for f in findings if f.code == "pid_namespaces_differ"]
    assert "names no GPU that NVML reports" not in finding.explanation
    assert "GPU 1 is not accessible from here" in finding.explanation


def test_an_engine_given_one_mig_slice_takes_only_that_slices_pids():
    """On a MIG card each GPU instance is usually another tenant's: an engine whose container names the MIG
    device of GPU instance 1 is placed on the card, and only NVML's pids on instance 1 are counted as its own."""
    mig_a, mig_b = f"MIG-{UUID_0[4:-1]}a", f"MIG-{UUID_0[4:-1]}b"
    card = gpu(
        0,
        used_gib=30,
        uuid=UUID_0,
        mig_enabled=True,
        mig_instances=[
            MigInstance(gpu_instance_id=1, compute_instance_ids=[0], uuid=mig_a),
            MigInstance(gpu_instance_id=2, compute_instance_ids=[0], uuid=mig_b),
        ],
    )
    s = sample(
        gpus=[card],
        processes=[
            process(812345, 20, 0, visible=False, gpu_instance_id=1, compute_instance_id=0),
            process(812401, 10, 0, visible=False, gpu_instance_id=2, compute_instance_id=0),
        ],
        engines=[engine(pids=(1,)).model_copy(update={"devices": [mig_a]})],
    )
    assert placed(s).engines[0].pids == [1, 812345]

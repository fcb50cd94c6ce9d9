"""Process lists under the real pynvml binding over the fake driver: entry layouts per driver release, the
function version picked once, MIG devices (GPU and compute instances, root or not) and MPS."""

from __future__ import annotations

import pytest

from gpumem_tui.demo import driver_abi as abi
from gpumem_tui.units import GIB, MIB
from tests.configs import MIG_ONE_JOB

THREE_JOBS = """
[[gpus]]
model = "h100"

[[processes]]
id = "a"
gpus = [0]
memory_gib = 10

[[processes]]
id = "b"
gpus = [0]
memory_gib = 5

[[processes]]
id = "c"
gpus = [0]
memory_gib = 2
"""
EXPECTED = [(3100, 10 * GIB), (3200, 5 * GIB), (3300, 2 * GIB)]

# One A100 in MIG mode: GPU instance 1 (40 GB) split into two compute instances, GPU instance 2 whole.
MIG_SPLIT = """
[[gpus]]
model = "a100-sxm4-80gb"
mig_instances_mib = [40192, 19968]
mig_compute_instances = [2, 1]

[[processes]]
id = "train"
gpus = [0]
memory_gib = 12
mig_instance = 0
mig_compute_instance = 0

[[processes]]
id = "eval"
gpus = [0]
memory_gib = 8
mig_instance = 0
mig_compute_instance = 1

[[processes]]
id = "notebook"
gpus = [0]
memory_gib = 5
mig_instance = 1
"""

MPS = """
[[gpus]]
model = "h100"

[[processes]]
id = "mps-server"
name = "nvidia-cuda-mps-server"
cmdline = ["nvidia-cuda-mps-server"]
gpus = [0]
memory_gib = 0.03125
nvml_kind = "compute"

[[processes]]
id = "worker-a"
gpus = [0]
memory_gib = 10
nvml_kind = "mps"

[[processes]]
id = "worker-b"
gpus = [0]
memory_gib = 6
nvml_kind = "mps"
"""

RELEASES = ["535.54.03", "550.144.03", "570.124.06", "470.256.02"]
"""Early R535 (32-byte `_v3` entries), R550 and R570 (24-byte `_v3`), R470 (no `_v3` at all)."""


def _rows(reading):
    return [(p.pid, p.gpu_memory_bytes) for p in sorted(reading.processes, key=lambda p: p.pid)]


def test_the_installed_binding_misreads_early_r535_entries(make_rig):
    """Why the source reads the lists itself: the binding strides 24 bytes over 32-byte entries."""
    rig = make_rig(THREE_JOBS, at=5, version="535.54.03")
    nvml = rig.binding
    nvml.nvmlInit()
    rows = [
        (p.pid, p.usedGpuMemory) for p in nvml.nvmlDeviceGetComputeRunningProcesses(nvml.nvmlDeviceGetHandleByIndex(0))
    ]
    nvml.nvmlShutdown()
    assert rows != EXPECTED
    assert {0, 0xFFFFFFFF} <= {pid for pid, _ in rows}


@pytest.mark.parametrize("version", RELEASES)
def test_the_source_reads_the_rows_the_driver_wrote(make_rig, version):
    rig = make_rig(THREE_JOBS, at=5, version=version)
    reading = rig.source.read()
    assert _rows(reading) == EXPECTED
    assert rig.node.gpus[0].used_bytes == sum(size for _, size in EXPECTED)
    assert all(p.gpu_instance_id is None and p.compute_instance_id is None for p in reading.processes)


def test_a_binding_with_32_byte_entries_over_a_24_byte_driver(make_rig):
    """nvidia-ml-py 12.535.77 reads 32-byte `_v3` entries; every driver but early R535 writes 24."""
    rig = make_rig(THREE_JOBS, at=5, version="570.124.06")
    rig.binding.c_nvmlProcessInfo_v3_t = abi.ProcessInfoV3R535
    assert _rows(rig.source.read()) == EXPECTED


def test_unversioned_only_driver_reads_16_byte_entries(make_rig):
    rig = make_rig(THREE_JOBS, at=5, version="470.256.02")
    for kind in ("Compute", "Graphics", "MPSCompute"):
        rig.driver.hide(f"nvmlDeviceGet{kind}RunningProcesses_v2")
    assert _rows(rig.source.read()) == EXPECTED


@pytest.mark.parametrize("version", RELEASES)
def test_the_process_call_version_is_picked_once(make_rig, version):
    """A symbol the driver lacks is looked up once per source, not once per sample."""
    rig = make_rig(THREE_JOBS, at=5, version=version)
    rig.source.read()
    missed = _process_misses(rig.driver)
    for _ in range(3):
        assert _rows(rig.source.read()) == EXPECTED
    assert _process_misses(rig.driver) == missed


def _process_misses(driver) -> dict[str, int]:
    return {name: count for name, count in driver.missed.items() if "RunningProcesses" in name}


@pytest.mark.parametrize("root", [True, False], ids=["root", "user"])
def test_mig_processes_carry_their_slice_memory(make_rig, root):
    """Per-process memory on a MIG card exists only on each MIG device: the parent's list has none as root
    and is refused otherwise (nvml.h, nvmlDeviceGetComputeRunningProcesses_v3)."""
    rig = make_rig(MIG_ONE_JOB, at=5, root=root)
    reading = rig.source.read()
    assert [(p.pid, p.gpu_memory_bytes, p.gpu_instance_id) for p in reading.processes] == [(3100, 20 * GIB, 1)]
    assert reading.errors == []


@pytest.mark.parametrize("root", [True, False], ids=["root", "user"])
@pytest.mark.parametrize("version", RELEASES)
def test_mig_processes_are_tagged_gpu_and_compute_instance(make_rig, root, version):
    rig = make_rig(MIG_SPLIT, at=5, root=root, version=version)
    reading = rig.source.read()
    tagged = [
        (p.pid, p.gpu_memory_bytes, p.gpu_instance_id, p.compute_instance_id)
        for p in sorted(reading.processes, key=lambda p: p.pid)
    ]
    assert tagged == [(3100, 12 * GIB, 1, 0), (3200, 8 * GIB, 1, 1), (3300, 5 * GIB, 2, 0)]


def test_a_gpu_instance_split_into_compute_instances_is_one_instance(make_rig):
    """Both MIG devices of GPU instance 1 report its 40 GB; the record holds it once, with both CI ids."""
    rig = make_rig(MIG_SPLIT, at=5)
    gpu = rig.source.read().gpus[0]
    assert [(m.gpu_instance_id, m.compute_instance_ids, m.memory_total_bytes) for m in gpu.mig_instances] == [
        (1, [0, 1], 40192 * MIB),
        (2, [0], 19968 * MIB),
    ]
    assert gpu.mig_instances[0].memory_used_bytes == 20 * GIB
    assert sum(m.memory_used_bytes for m in gpu.mig_instances) == gpu.memory_used_bytes
    assert gpu.utilization_gpu_percent is None  # NVML: not supported on a MIG card


def test_mps_clients_are_a_kind_of_their_own_and_counted_once(make_rig):
    rig = make_rig(MPS, at=5)
    reading = rig.source.read()
    kinds = [(p.pid, p.kind, p.gpu_memory_bytes) for p in sorted(reading.processes, key=lambda p: p.pid)]
    assert kinds == [(3100, "compute", 32 * MIB), (3200, "mps", 10 * GIB), (3300, "mps", 6 * GIB)]
    assert sum(p.gpu_memory_bytes for p in reading.processes) == reading.gpus[0].memory_used_bytes


def test_the_layout_is_measured_where_the_symbol_table_would_guess_wrong(make_rig):
    """A 535.54 driver without the confidential-computing symbol (a build nvitop's symbol tree cannot
    express): the tree would say 24-byte entries, the bytes written say 32."""
    rig = make_rig(THREE_JOBS, at=5, version="535.54.03")
    rig.driver.hide("nvmlDeviceGetConfComputeMemSizeInfo")
    assert _rows(rig.source.read()) == EXPECTED


def test_a_list_that_outgrows_its_buffer_between_the_two_calls_is_read_whole(make_rig):
    """Twelve processes start between the count call (one process) and the fill call (room for seven): the
    driver answers INSUFFICIENT_SIZE with the new count, and the fill is asked again."""
    crowd = "".join(f'\n[[processes]]\nid = "p{k}"\ngpus = [0]\nmemory_gib = 1\nstart_s = 1\n' for k in range(12))
    rig = make_rig(
        THREE_JOBS.split("[[processes]]")[0] + '[[processes]]\nid = "first"\ngpus = [0]\nmemory_gib = 1\n' + crowd, at=0
    )
    symbol = "nvmlDeviceGetComputeRunningProcesses_v3"
    fills = []

    def count_call(_handle, _count, infos):
        if not infos and rig.clock() == 0:
            rig.clock.set(1)  # the crowd starts between this call and the next
        fills.extend([infos] if infos else [])

    rig.driver.after(symbol, count_call)
    reading = rig.source.read()
    assert sorted(p.pid for p in reading.processes) == [3100 + 100 * k for k in range(13)]
    assert all(p.gpu_memory_bytes == GIB for p in reading.processes)
    assert len(fills) >= 2  # the first fill was refused for room, and asked again


def test_a_probe_that_cannot_tell_falls_back_to_the_exported_symbols(make_rig):
    """A process starts between the two probe calls (the counts differ): that sample's layout comes from
    nvitop's symbol tree (32 bytes on 535.54), and the next sample measures it."""
    text = THREE_JOBS + '\n[[processes]]\nid = "late"\ngpus = [0]\nmemory_gib = 1\nstart_s = 6\n'
    rig = make_rig(text, at=5, version="535.54.03")
    fills = []

    def start_one_between_probes(_handle, _count, infos):
        fills.extend([infos] if infos else [])
        if len(fills) == 1:
            rig.clock.set(6)

    rig.driver.after("nvmlDeviceGetComputeRunningProcesses_v3", start_one_between_probes)
    assert _rows(rig.source.read()) == EXPECTED  # the first fill's rows, read at the symbol tree's stride
    assert rig.source._lists._strides == {}
    assert _rows(rig.source.read()) == [*EXPECTED, (3400, GIB)]
    assert rig.source._lists._strides == {"_v3": 32}


def test_every_compute_instances_mig_uuid_places_an_engine_on_its_card(make_rig):
    """Each MIG device (one per compute instance) has a UUID of its own, and a container's
    NVIDIA_VISIBLE_DEVICES may name any of them: all are kept, so the engine is placed on the parent card."""
    from gpumem_tui.sources.placement import device_gpus

    reading = make_rig(MIG_SPLIT, at=5).source.read()
    mig_uuids = [f"MIG-{reading.gpus[0].uuid[4:]}-{slot}" for slot in range(3)]  # the fake driver's MIG UUIDs
    for uuid in mig_uuids:
        assert device_gpus([uuid], reading.gpus) == [0], uuid
    assert device_gpus(["MIG-00000000-dead-4000-8000-000000000000"], reading.gpus) == []

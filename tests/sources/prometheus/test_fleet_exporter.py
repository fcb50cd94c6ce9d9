"""The fleet reads `gpumem-tui export`'s own series where a node runs it (docs/export.md): GPU memory where
dcgm-exporter is missing (compared, never added, where both are), the engines' KV cache where vLLM is not
scraped, each engine's plan, and the memory of processes that are not engines. A real Prometheus over a
small fleet of its own, backfilled from the simulator with the exporter's own code writing its series."""

from __future__ import annotations

import asyncio
import json
import math
import urllib.parse
import urllib.request

import pytest

from gpumem_tui.cli import main
from gpumem_tui.demo.fleet_answers import demo_sample
from gpumem_tui.demo.fleet_series import FleetNodeSpec, fleet_series
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
from gpumem_tui.sources.prometheus.node_feed import prometheus_node_feed
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.reader import FleetReader
from gpumem_tui.sources.prometheus.records import FleetGpu, FleetSample
from tests.sources.prometheus.server import T0, backfill, require_prometheus, running

pytestmark = pytest.mark.prometheus

FLEET = (
    # Only the exporter: no dcgm-exporter, no vLLM scrape job.
    FleetNodeSpec("node-x", "wrong-precision", "exported_pod", "Hostname", exporter=True, dcgm=False, vllm=False),
    # Both exporters on bare metal, and vLLM scraped: the notebook beside the engine is a process of its own.
    FleetNodeSpec("node-y", "noisy-neighbour", "bare", "Hostname", exporter=True),
    # dcgm-exporter and the exporter, no vLLM scrape job.
    FleetNodeSpec("node-z", "kv-pressure", "exported_pod", "Hostname", exporter=True, vllm=False),
    # No exporter: nothing of it is made up.
    FleetNodeSpec("node-w", "healthy-8b", "exported_pod", "Hostname"),
)
END_S, STEP_S = 50, 5
AT = T0 + END_S
ENGINE_BANDS = "weights|non_torch|activations|cuda_graphs|kv_cache"
LOOK = Thresholds().headroom_warning_fraction


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    require_prometheus()
    with running(backfill(fleet_series(FLEET, END_S, STEP_S), tmp_path_factory.mktemp("exporter-fleet"))) as url:
        yield url


def _read(url: str, queries: Queries | None = None):
    async def read():
        async with PrometheusClient(Connection(url)) as client:
            return await FleetReader(queries or Queries(), FleetRules()).read(client, AT)

    return asyncio.run(read())


def _query(url: str, promql: str) -> dict[str, float]:
    """node -> value of an instant query at AT (one series per node)."""
    address = f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql, 'time': AT})}"
    with urllib.request.urlopen(address, timeout=10) as response:
        answer = json.load(response)
    return {s["metric"].get("Hostname", ""): float(s["value"][1]) for s in answer["data"]["result"]}


def _node(sample, name):
    (node,) = [n for n in sample.nodes if n.name == name]
    return node


def test_a_node_without_dcgm_exporter_has_its_memory_from_its_exporter(url):
    sample = _read(url)
    x = _node(sample, "node-x")
    used = _query(url, "sum by (Hostname) (gpumem_gpu_memory_used_bytes)")["node-x"]
    free = _query(url, "sum by (Hostname) (gpumem_gpu_memory_free_bytes)")["node-x"]
    assert (x.used_bytes, x.free_bytes, x.memory_from) == (used, free, "gpumem-tui export")
    assert x.gpus == 2 and x.cards == {"NVIDIA H100 80GB HBM3": 2}  # wrong-precision: a 70B over two GPUs
    assert x.total_bytes == _query(url, "sum by (Hostname) (gpumem_gpu_memory_total_bytes)")["node-x"]
    gpus = [g for g in sample.gpus if g.node == "node-x"]
    assert {g.memory_from for g in gpus} == {"gpumem-tui export"} and sum(g.used_bytes or 0 for g in gpus) == used
    assert x.data_age_s is not None and "node-x" not in sample.stale_nodes


def test_a_node_with_both_takes_dcgm_exporter_and_compares(url):
    sample = _read(url)
    y = _node(sample, "node-y")
    dcgm = _query(url, 'sum by (Hostname) (DCGM_FI_DEV_FB_USED{Hostname="node-y"}) * 2^20')["node-y"]
    ours = _query(url, "sum by (Hostname) (gpumem_gpu_memory_used_bytes)")["node-y"]
    assert y.memory_from == "dcgm-exporter" and y.used_bytes == dcgm  # not dcgm + ours
    assert y.exporter_used_bytes == ours and abs(ours - dcgm) < 2**20


def test_engines_with_no_vllm_series_come_from_the_exporter(url):
    sample = _read(url)
    kv = _query(url, "max by (Hostname) (gpumem_engine_kv_cache_usage_ratio)")
    pool = _query(url, "max by (Hostname) (gpumem_engine_kv_cache_pool_tokens)")
    (z,) = [e for e in sample.engines if e.node == "node-z"]
    assert (z.kv_usage_fraction, z.pool_tokens) == (kv["node-z"], pool["node-z"])
    # wrong-precision 50 s in: the engine is still loading, its exporter has its plan and no KV yet
    (x,) = [e for e in sample.engines if e.node == "node-x"]
    assert "node-x" not in kv and x.kv_usage_fraction is None
    assert "did not answer its last refresh" in x.unknown["kv_usage_fraction"]
    for engine, gpus in ((z, 1), (x, 2)):
        assert engine.joined == "found" and "gpumem-tui export on node" in engine.join_reason
        assert engine.gpu_count == gpus
    # its GPUs by UUID, so the model's memory used counts them (the fleet screen's model table)
    assert x.gpus == sorted(g.uuid for g in sample.gpus if g.node == "node-x")
    # where vLLM is scraped, its own series are the engine's: one engine per node, not two
    assert len([e for e in sample.engines if e.node == "node-y"]) == 1
    assert sample.coverage.engines == 4 and sample.coverage.not_joined == 0


def test_each_engine_has_its_node_s_plan(url):
    sample = _read(url)
    # each GPU's band once: the engine's labels grow `engine` when it first answers, and a backfilled series
    # has no staleness marker to end the one before
    bands = f'gpumem_plan_bytes{{band=~"{ENGINE_BANDS}"}}'
    planned = _query(url, f"sum by (Hostname) (max by (Hostname, UUID, band) ({bands}))")
    for engine in sample.engines:
        if engine.node == "node-w":  # no exporter: no plan from one
            assert engine.plan_from is None and engine.planned_bytes is None
            continue
        assert (engine.planned_bytes, engine.plan_from) == (planned[engine.node], "exporter"), engine.name
    (y,) = [e for e in sample.engines if e.node == "node-y"]
    assert y.job == "vllm"  # the exporter's plan joined to vLLM's own engine


def test_processes_that_are_not_engines_are_the_gpu_s_other_holders(url):
    sample = _read(url)
    (gpu,) = [g for g in sample.gpus if g.node == "node-y"]
    named = [p for p in gpu.processes if p.pid != "other"]
    (notebook,) = named
    stored = _query(url, f'gpumem_process_memory_used_bytes{{Hostname="node-y", pid="{notebook.pid}"}}')["node-y"]
    assert notebook.used_bytes == stored and notebook.name == "python3"
    assert _node(sample, "node-y").other_processes_bytes == stored
    assert "other_processes_bytes" not in _node(sample, "node-y").unknown
    assert _node(sample, "node-w").other_processes_bytes is None
    assert _node(sample, "node-w").unknown["other_processes_bytes"].startswith("no gpumem-tui export on the node")


def test_the_overview_says_what_the_full_read_says(url):
    full, overview = _read(url), _read(url, Queries(look=LOOK))
    assert overview.nodes == full.nodes and overview.coverage == full.coverage
    assert [e.model_copy(update={"gpus": []}) for e in overview.engines] == [
        e.model_copy(update={"gpus": []}) for e in full.engines
    ]
    said = [(f.node, f.finding.code, f.finding.severity) for f in judge_fleet(full)]
    assert [(f.node, f.finding.code, f.finding.severity) for f in judge_fleet(overview)] == said


def test_a_node_that_judges_itself_is_judged_once(url, capsys):
    """On a node that runs the exporter, the node's own findings are the node's: the fleet adds none of the
    single-node codes from the same figures, so `fleet check` says per node what `check --demo` says."""
    main(["fleet", "check", "--prometheus", url, "--at", str(AT), "--json"])
    fleet = json.loads(capsys.readouterr().out)
    for spec in FLEET[:3]:
        main(["check", "--demo", spec.scenario, "--at", str(END_S), "--json"])
        node = json.loads(capsys.readouterr().out)
        ours = sorted((f["code"], f["severity"], f["gpu_index"]) for f in fleet["findings"] if f["node"] == spec.name)
        assert ours == sorted((f["code"], f["severity"], f["gpu_index"]) for f in node["findings"]), spec.name


def test_an_exported_finding_is_said_in_the_node_s_words(url, capsys):
    """The fleet reads the title and what to try (`gpumem_finding_info`) of each exported finding that needs a
    look and says them as the node's `check` does, a GPU's finding (node-y's notebook) as an engine's; an info
    finding (one per GPU on a healthy node) is said by its code's meaning, so the read is never per GPU."""
    main(["fleet", "check", "--prometheus", url, "--at", str(AT), "--json"])
    fleet = json.loads(capsys.readouterr().out)["findings"]
    compared, noted = set(), set()
    for spec in FLEET[:3]:
        main(["check", "--demo", spec.scenario, "--at", str(END_S), "--json"])
        node = {_key(f): (f["title"], f["try_this"]) for f in json.loads(capsys.readouterr().out)["findings"]}
        ours = {_key(f): (f["title"], f["try_this"]) for f in fleet if f["node"] == spec.name}
        assert ours.keys() == node.keys(), spec.name
        for key, (title, advice) in ours.items():
            if key[1] == "info":
                assert title.startswith(f"node {spec.name} ") and advice.startswith("run `gpumem-tui check -v`")
                noted.add(key[0])
            else:
                assert (title, advice) == node[key], spec.name
                compared.add(key[0])
    assert (compared, noted) == ({"foreign_process", "headroom_low"}, {"engine_starting", "headroom_low"})


def _key(finding: dict) -> tuple:
    return (finding["code"], finding["severity"], finding["gpu_index"], finding["pid"], finding["endpoint"])


def test_the_demo_answers_the_exporter_queries_as_prometheus_does(url):
    real, demo = _read(url), demo_sample(FLEET, END_S, STEP_S, url)
    assert demo.nodes == real.nodes and demo.gpus == real.gpus
    for d, r in zip(demo.engines, real.engines, strict=True):
        assert d.model_copy(update={"preemptions_per_min": None}) == r.model_copy(update={"preemptions_per_min": None})
    assert not any(isinstance(n.used_bytes, float) and math.isnan(n.used_bytes) for n in demo.nodes)


@pytest.mark.parametrize("read", ["--overview", "--full"])
def test_a_node_only_its_exporter_reports_is_stale_within_the_hour_never_gone(url, capsys, read):
    """node-x's exporter published last at AT; 400 s later, past Prometheus's 5 min lookback, node-x is still
    named, stale with its age and whose sample it was, as dcgm-exporter's nodes are for the hour."""
    later = AT + 400
    main(["fleet", "check", "--prometheus", url, "--at", str(later), "--json", read])
    stale = {
        f["node"]: f["title"] for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "source_stale"
    }
    assert stale["node-x"] == "node node-x: its newest gpumem-tui export sample is 400 s old"
    assert set(stale) == {"node-w", "node-x", "node-y", "node-z"}
    main(["fleet", "snapshot", "--prometheus", url, "--at", str(later), "--json", read])
    snap = json.loads(capsys.readouterr().out)
    assert snap["stale_nodes"]["node-x"] == 400
    (x,) = [n for n in snap["nodes"] if n["name"] == "node-x"]
    assert x["used_bytes"] is None and "5 min" in x["unknown"]["used_bytes"]
    # an hour on, forgotten as dcgm-exporter's nodes are
    main(["fleet", "snapshot", "--prometheus", url, "--at", str(AT + 3700), "--json", read])
    assert "node-x" not in {n["name"] for n in json.loads(capsys.readouterr().out)["nodes"]}


def test_the_screen_s_reader_keeps_a_stale_exporter_node_between_its_slow_reads(url):
    """The fleet screen's reader reads who was seen within the hour with its slow facts; a refresh between them
    still names node-x, now past the lookback."""

    async def reads() -> list[FleetSample]:
        reader = FleetReader(Queries(look=LOOK), FleetRules())
        async with PrometheusClient(Connection(url)) as client:
            return [await reader.read(client, at) for at in (AT + 320, AT + 400)]

    first, second = asyncio.run(reads())
    assert second.join_age_s == 80  # the facts of the first read, kept
    assert (first.stale_nodes["node-x"], second.stale_nodes["node-x"]) == (320, 400)


def _low_headroom(exporter_age: float | None):
    gpu = FleetGpu(node="n", index="0", uuid="GPU-1", used_bytes=79 * 10**9, free_bytes=10**9, total_bytes=80 * 10**9)
    ages = {} if exporter_age is None else {"n": exporter_age}
    return FleetSample(source="-", evaluated_at=AT, gpus=[gpu], exporter_nodes=ages)


def test_the_fleet_leaves_a_node_with_a_live_exporter_to_judge_itself():
    """1 GB free of 80 GB: the fleet would say headroom_low; a node whose exporter publishes judged it with its
    plan and raised nothing, so nothing is raised; once its exporter is stale the fleet judges again."""
    assert [f.finding.code for f in judge_fleet(_low_headroom(None))] == ["headroom_low"]
    assert judge_fleet(_low_headroom(5.0)) == []
    assert [f.finding.code for f in judge_fleet(_low_headroom(600.0))] == ["headroom_low"]


def test_the_snapshot_text_says_whose_memory_and_plan(url, capsys):
    assert main(["fleet", "snapshot", "--prometheus", url, "--at", str(AT)]) == 0
    lines = capsys.readouterr().out.splitlines()
    (x,) = [line for line in lines if line.startswith("  node-x:")]
    (y,) = [line for line in lines if line.startswith("  node-y:")]
    assert "(from gpumem-tui export)" in x
    assert "(dcgm-exporter's; its gpumem-tui export reads used " in y and "other processes 21.5 GB" in y
    (engine,) = [line for line in lines if " on node-y: " in line]
    assert "(from its node's gpumem-tui export)" in engine


def test_a_node_that_runs_only_the_exporter_opens_as_any_other(url, capsys):
    """node-x is listed by the fleet; `check --node` and the node's screen (its feed) read it from its
    exporter's series as the fleet does: its two GPUs, its engine and its plan's findings."""
    code = main(["check", "--prometheus", url, "--node", "node-x", "--at", str(AT), "--json"])
    checked = json.loads(capsys.readouterr().out)
    assert code == checked["exit_code"] and "node node-x" in checked["where"]
    assert [p["model"] for p in checked["plans"]] == ["meta-llama/Llama-3.1-70B"]
    main(["fleet", "snapshot", "--prometheus", url, "--at", str(AT), "--json"])
    (x,) = [n for n in json.loads(capsys.readouterr().out)["nodes"] if n["name"] == "node-x"]

    async def screen_read():
        feed = prometheus_node_feed(Connection(url), "node-x", at=AT, stale=FleetRules().stale)
        return await feed.sample()

    sample = asyncio.run(screen_read())
    assert len(sample.gpus) == 2 and sum(g.memory_used_bytes or 0 for g in sample.gpus) == x["used_bytes"]
    assert [e.records[0].model for e in sample.engines] == ["meta-llama/Llama-3.1-70B"]
    assert not any("dcgm-exporter sample" in e.message for e in sample.errors)


def test_a_node_that_runs_only_the_exporter_has_a_history(url):
    """node-x's forensics history (`f`) reads its exporter's series as its instant read does: each step is the
    sample an instant read of that moment makes, and no step is a gap for want of dcgm-exporter."""
    from gpumem_tui.sources.prometheus.node_history import read_node_history
    from gpumem_tui.sources.prometheus.node_queries import NodeQueries

    stale = FleetRules().stale

    async def history():
        async with PrometheusClient(Connection(url)) as client:
            return await read_node_history(client, NodeQueries("node-x"), AT, END_S, stale)

    async def instant(at: float):
        return await prometheus_node_feed(Connection(url), "node-x", at=at, stale=stale).sample()

    read = asyncio.run(history())
    assert len(read.samples) > 2 and len(read.moments) == len(read.samples)
    for moment, sample in zip(read.moments, read.samples, strict=True):
        assert sample == asyncio.run(instant(moment)), moment - T0
    assert [len(s.gpus) for s in read.samples] == [2] * len(read.samples)
    assert not any("dcgm-exporter" in w for w in read.warnings)


def test_a_gap_in_an_exporter_only_node_s_history_names_its_exporter(url):
    """Past the fixture's end node-x reports nothing: the gap is its gpumem-tui export's, not dcgm-exporter's."""
    from gpumem_tui.sources.prometheus.node_history import read_node_history
    from gpumem_tui.sources.prometheus.node_queries import NodeQueries

    async def history():
        async with PrometheusClient(Connection(url)) as client:
            return await read_node_history(client, NodeQueries("node-x"), AT + 600, 700, FleetRules().stale)

    gaps = [w for w in asyncio.run(history()).warnings if " sample from " in w]
    assert gaps and all("no new gpumem-tui export sample" in w for w in gaps)

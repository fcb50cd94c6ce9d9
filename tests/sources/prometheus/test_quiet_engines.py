"""An engine's requests waiting and preemptions are asked only where they are not zero, and the quiet queries
(waiting, preemptions, sleeping, the exporters' findings, targets down) go as one request: what a refresh
reads must stay what it read when every engine sent every series and each query went alone.

The fleet here is written by hand, 3 min of it: engine `busy` waits (3 requests) and preempts; `calm`
exports both counters at 0; `old` exports neither (a vLLM build without them): its fields are unknown, never
0; `young` starts its preemption counter at the read (one sample: no rate yet); `late` starts at LATE_S (its
pod's GPU reports from the start), both counters at 0; `nopool` starts at NOPOOL_S likewise, without
`vllm:cache_config_info` (so no pool change says it came); `broken` reports both as NaN (no reading, never 0);
a vLLM target is down."""

from __future__ import annotations

import asyncio

import pytest

from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
from gpumem_tui.sources.prometheus.fleet import QUIET, ask
from gpumem_tui.sources.prometheus.queries import PART, Queries, merged
from gpumem_tui.sources.prometheus.query_table import TABLE
from gpumem_tui.sources.prometheus.reader import FleetReader
from tests.sources.prometheus.server import T0, backfill, require_prometheus, running

pytestmark = pytest.mark.prometheus
END_S, YOUNG_S, LATE_S, NOPOOL_S = 180, 180, 100, 130
ENGINES = ("busy", "calm", "old", "young", "late", "broken", "nopool")


def _engine(name: str) -> str:
    return f'model_name="m",engine="0",job="vllm",namespace="serving",pod="{name}",instance="{name}:8000"'


def _text() -> str:
    rows: dict[str, list[str]] = {
        "DCGM_FI_DEV_FB_USED": [],
        "vllm:kv_cache_usage_perc": [],
        "vllm:num_requests_running": [],
        "vllm:num_requests_waiting": [],
        "vllm:num_preemptions_total": [],
        "vllm:cache_config_info": [],
        "up": [],
    }
    for s in range(0, END_S + 1, 10):
        t = T0 + s
        rows["up"].append(f'up{{job="vllm",instance="gone:8000"}} 0 {t}')
        for n, name in enumerate(ENGINES):
            gpu = f'gpu="0",UUID="GPU-{n}",modelName="NVIDIA H100 80GB HBM3",Hostname="node-{n}"'
            rows["DCGM_FI_DEV_FB_USED"].append(
                f'DCGM_FI_DEV_FB_USED{{{gpu},exported_namespace="serving",exported_pod="{name}"}} 70000 {t}'
            )
            if (name == "late" and s < LATE_S) or (name == "nopool" and s < NOPOOL_S):
                continue
            labels = _engine(name)
            rows["vllm:kv_cache_usage_perc"].append(f"vllm:kv_cache_usage_perc{{{labels}}} 0.5 {t}")
            rows["vllm:num_requests_running"].append(f"vllm:num_requests_running{{{labels}}} 2 {t}")
            config = f'{labels},gpu_memory_utilization="0.9",block_size="16",num_gpu_blocks="100"'
            if name != "nopool":
                rows["vllm:cache_config_info"].append(f"vllm:cache_config_info{{{config}}} 1 {t}")
            if name != "old":
                waiting = {"busy": "3", "broken": "NaN"}.get(name, "0")
                rows["vllm:num_requests_waiting"].append(f"vllm:num_requests_waiting{{{labels}}} {waiting} {t}")
            if name in ("busy", "calm", "late", "broken", "nopool") or (name == "young" and s >= YOUNG_S):
                count = {"busy": s, "broken": "NaN"}.get(name, 0)  # busy: one preemption a second
                rows["vllm:num_preemptions_total"].append(f"vllm:num_preemptions_total{{{labels}}} {count} {t}")
    out = []
    for name, found in rows.items():
        kind = "counter" if name.endswith("_total") else "gauge"
        out += [f"# TYPE {name.removesuffix('_total') if kind == 'counter' else name} {kind}", *found]
    return "\n".join(out) + "\n# EOF\n"


@pytest.fixture(scope="module")
def quiet_url(tmp_path_factory):
    require_prometheus()
    with running(backfill(_text(), tmp_path_factory.mktemp("quiet"))) as url:
        yield url


def _read(url: str, queries: Queries):
    async def read():
        async with PrometheusClient(Connection(url)) as client:
            return await FleetReader(queries, FleetRules()).read(client, T0 + END_S) if queries.look else None

    return asyncio.run(read())


def _full(url: str):

    async def read():
        async with PrometheusClient(Connection(url)) as client:
            return await FleetReader(Queries(), FleetRules()).read(client, T0 + END_S)

    return asyncio.run(read())


def _by_pod(sample):
    return {e.pod: e for e in sample.engines}


@pytest.mark.parametrize("read", ["overview", "full"])
def test_an_engine_left_out_reads_as_zero_only_where_it_exports_the_series(quiet_url, read):
    sample = _full(quiet_url) if read == "full" else _read(quiet_url, Queries(look=0.1))
    engines = _by_pod(sample)
    assert engines["busy"].requests_waiting == 3 and engines["busy"].preemptions_per_min == pytest.approx(60, rel=0.1)
    assert engines["calm"].requests_waiting == 0 and engines["calm"].preemptions_per_min == 0
    assert engines["calm"].unknown == {}
    old = engines["old"]
    assert old.requests_waiting is None and old.unknown["requests_waiting"] == "no vllm:num_requests_waiting series"
    assert old.preemptions_per_min is None and "no vllm:num_preemptions_total" in old.unknown["preemptions_per_min"]
    broken = engines["broken"]  # NaN is no reading: unknown, as when each series was asked in full
    assert broken.requests_waiting is None and broken.preemptions_per_min is None
    assert (
        broken.unknown["requests_waiting"]
        == broken.unknown["preemptions_per_min"]
        == ("the engine reported NaN: no reading")
    )
    young = engines["young"]  # one sample of its counter: no rate yet, so no zero either
    assert young.requests_waiting == 0 and young.preemptions_per_min is None
    assert "under 2 min" in young.unknown["preemptions_per_min"]


def test_a_failed_counters_query_leaves_the_quiet_fields_unknown_with_the_reason(quiet_url, monkeypatch):
    monkeypatch.setattr(Queries, "engine_counters", property(lambda _q: "vllm:cache_config_info offset 0ms"))
    engines = _by_pod(_read(quiet_url, Queries(look=0.1)))
    assert engines["busy"].requests_waiting == 3  # read, so known
    calm = engines["calm"]
    assert calm.requests_waiting is None and calm.preemptions_per_min is None
    assert calm.unknown["requests_waiting"].startswith("not known to be zero: ")
    assert "bad_data" in calm.unknown["preemptions_per_min"]


def test_the_merged_request_answers_what_each_query_answers_alone(quiet_url):
    q = Queries()
    parts = {name: TABLE[name].promql(q) for name in QUIET}

    async def both():
        async with PrometheusClient(Connection(quiet_url)) as client:
            alone = {name: await client.query(promql, T0 + END_S) for name, promql in parts.items()}
            together, failures = await ask(client, parts, T0 + END_S)
            return alone, together, failures

    alone, together, failures = asyncio.run(both())
    assert not failures and PART not in merged({"a": "up"}).split(",")[0]
    assert sum(len(r.series) for r in alone.values()) >= 3  # busy's waiting and preemptions, and targets
    for name in QUIET:
        key = sorted((sorted(s.labels.items()), repr(s.value)) for s in alone[name].series)  # repr: NaN == NaN
        assert sorted((sorted(s.labels.items()), repr(s.value)) for s in together[name].series) == key, name


def test_a_part_the_server_refuses_fails_alone(quiet_url, monkeypatch):
    """A server that refuses one part (an older Prometheus without `last_over_time`, say) refuses the merged
    request: its parts are then asked alone, so the others answer as they did when each query went alone."""
    monkeypatch.setattr(Queries, "sleeping", property(lambda _q: "vllm:cache_config_info offset 0ms"))
    q = Queries()

    async def read():
        async with PrometheusClient(Connection(quiet_url)) as client:
            return await ask(
                client, {"engines": q.engines, **{name: TABLE[name].promql(q) for name in QUIET}}, T0 + END_S
            )

    results, failures = asyncio.run(read())
    assert set(results) == {"engines", *QUIET} - {"sleeping"} and set(failures) == {"sleeping"}
    assert sorted(s.labels["pod"] for s in results["waiting"].series) == ["broken", "busy"]


@pytest.mark.parametrize("offsets", [(60, LATE_S, END_S), (110, END_S)])
def test_an_engine_younger_than_its_rate_reads_as_the_full_read_does_once_it_has_one(quiet_url, offsets):
    """One reader refresh after refresh (the screen's): `late` comes at LATE_S with one sample of its counter
    (no rate: unknown), and has a rate of 0 a minute later, which the full read says; the kept counters must
    not hold it unknown until the facts are read again (5 min). `nopool` comes between two refreshes with no
    pool that changes: its counters are 0 as the full read says, not unknown for want of a read of them."""

    async def reads():
        async with PrometheusClient(Connection(quiet_url)) as client:
            reader = FleetReader(Queries(look=0.1), FleetRules())
            found = []
            for at in (T0 + s for s in offsets):
                overview = await reader.read(client, at)
                full = await FleetReader(Queries(), FleetRules()).read(client, at)
                found.append((at - T0, _by_pod(overview), _by_pod(full)))
            return found

    fields = ("requests_waiting", "preemptions_per_min")
    found = asyncio.run(reads())
    for s, overview, full in found:
        assert overview.keys() == full.keys(), s
        for pod, engine in full.items():
            got = overview[pod]
            for field in fields:
                assert (got.model_dump()[field], got.unknown.get(field)) == (
                    engine.model_dump()[field],
                    engine.unknown.get(field),
                ), (s, pod, field)
    *_, (_, overview, _) = found
    assert overview["late"].preemptions_per_min == 0


@pytest.mark.parametrize("s", [LATE_S, END_S])
def test_the_node_read_says_what_the_fleet_says_of_each_engine_s_queue_and_preemptions(quiet_url, s):
    """The single-node read (`check --prometheus URL --node N`) asks its engines' series unfiltered; the fleet
    asks only where not 0 and reads the rest from the counters: the same values, and the same reasons where
    unknown."""
    from gpumem_tui.sources.prometheus.node_feed import read_node
    from gpumem_tui.sources.prometheus.node_queries import NodeQueries

    async def reads():
        async with PrometheusClient(Connection(quiet_url)) as client:
            fleet = await FleetReader(Queries(look=0.1), FleetRules()).read(client, T0 + s)
            nodes = {e.node for e in fleet.engines}
            alone = [await read_node(client, NodeQueries(node), T0 + s, stale) for node in sorted(nodes)]
            return fleet, [e for read in alone for e in read.fleet.engines]

    fleet, alone = asyncio.run(reads())
    assert len(alone) == len(fleet.engines) >= 5
    fields = ("requests_waiting", "preemptions_per_min")
    for engine in alone:
        theirs = _by_pod(fleet)[engine.pod]
        for field in fields:
            assert (getattr(engine, field), engine.unknown.get(field)) == (
                getattr(theirs, field),
                theirs.unknown.get(field),
            ), (engine.pod, field)

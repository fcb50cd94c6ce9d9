"""The fleet reader across refreshes (the screen's worker): what changes slowly (GPUs per node and card, which
pod holds which GPU: the join) is read every FACTS_EVERY_S or when the set of nodes changes, and a join read
earlier says how old it is, never passing for one read now.

The fleet here is written by hand: pod `serving/mover` is on node-x's GPU until 200 s, then on node-y's;
node-z starts reporting at 600 s; node-w has two GPUs until its second stops reporting at 400 s. The engine
restarts with other cache settings at 150 s (more KV blocks); a second engine, on pod `serving/leaver`, stops
at 100 s; a third, on pod `serving/crasher` in a job of its own, comes at 760 s and its target is down from
780 s. Without staleness markers (backfilled data) a series that stopped is still read for 5 min."""

from __future__ import annotations

import asyncio
import re

import pytest

from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, PrometheusError, Result
from gpumem_tui.sources.prometheus.fleet_engines import DOWN
from gpumem_tui.sources.prometheus.fleet_nodes import NodeMemo, nodes_of
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.reader import FACTS_EVERY_S, FleetReader
from tests.sources.prometheus.conftest import AT
from tests.sources.prometheus.server import T0, backfill, require_prometheus, running

pytestmark = pytest.mark.prometheus
MOVED_S, Z_FROM_S, LOST_S, END_S = 200, 600, 400, 800
RESTART_S, LEFT_S = 150, 100
CRASH_S = 760
"""An engine in a job of its own comes then, and its target is down two samples later."""
CRASHER = 'model_name="m3",engine="0",job="vllm-new",namespace="serving",pod="crasher",instance="10.2.0.3:8000"'
GPU = 'gpu="0",modelName="NVIDIA H100 80GB HBM3",job="dcgm-exporter"'


def _text() -> str:
    lines: dict[str, list[str]] = {"DCGM_FI_DEV_FB_USED": [], "DCGM_FI_DEV_FB_FREE": [], "DCGM_FI_DEV_FB_RESERVED": []}
    vllm: dict[str, list[str]] = {"vllm:kv_cache_usage_perc": [], "vllm:cache_config_info": [], "up": []}
    for s in range(0, END_S + 1, 10):
        t = T0 + s
        for node in ("node-x", "node-y", "node-z"):
            if node == "node-z" and s < Z_FROM_S:
                continue
            held = (node == "node-x") == (s < MOVED_S)
            pod = ',exported_namespace="serving",exported_pod="mover"' if held and node != "node-z" else ""
            labels = f'{GPU},UUID="GPU-{node}",Hostname="{node}",instance="{node}:9400"{pod}'
            used = 500  # the same with or without the pod: a node's memory in all stays as it is
            for name, value in (("USED", used), ("FREE", 81559 - used - 500), ("RESERVED", 500)):
                lines[f"DCGM_FI_DEV_FB_{name}"].append(f"DCGM_FI_DEV_FB_{name}{{{labels}}} {value} {t}")
        for index in (0, 1) if s < LOST_S else (0,):
            labels = f'{GPU.replace("0", str(index), 1)},UUID="GPU-w{index}",Hostname="node-w",instance="node-w:9400"'
            for name, value in (("USED", 500), ("FREE", 80559), ("RESERVED", 500)):
                lines[f"DCGM_FI_DEV_FB_{name}"].append(f"DCGM_FI_DEV_FB_{name}{{{labels}}} {value} {t}")
        engine = 'model_name="m",engine="0",job="vllm",namespace="serving",pod="mover",instance="10.2.0.1:8000"'
        vllm["vllm:kv_cache_usage_perc"].append(f"vllm:kv_cache_usage_perc{{{engine}}} 0.5 {t}")
        blocks = 1000 if s < RESTART_S else 1200
        config = f'{engine},gpu_memory_utilization="0.9",block_size="16",num_gpu_blocks="{blocks}"'
        vllm["vllm:cache_config_info"].append(f"vllm:cache_config_info{{{config}}} 1 {t}")
        if s < LEFT_S:
            leaver = 'model_name="m2",engine="0",job="vllm",namespace="serving",pod="leaver",instance="10.2.0.2:8000"'
            vllm["vllm:kv_cache_usage_perc"].append(f"vllm:kv_cache_usage_perc{{{leaver}}} 0.1 {t}")
            config = f'{leaver},gpu_memory_utilization="0.9",block_size="16",num_gpu_blocks="10"'
            vllm["vllm:cache_config_info"].append(f"vllm:cache_config_info{{{config}}} 1 {t}")
        _crasher(vllm, s, t)
    out = []
    for name, rows in {**lines, **vllm}.items():
        out += [f"# TYPE {name} gauge", *rows]
    return "\n".join(out) + "\n# EOF\n"


def _crasher(vllm: dict[str, list[str]], s: int, t: int) -> None:
    """The engine that comes at CRASH_S in a job of its own: its series for 20 s, its target down after."""
    if s >= CRASH_S:
        vllm["up"].append(f'up{{job="vllm-new",instance="10.2.0.3:8000"}} {int(s < CRASH_S + 20)} {t}')
    if CRASH_S <= s < CRASH_S + 20:
        vllm["vllm:kv_cache_usage_perc"].append(f"vllm:kv_cache_usage_perc{{{CRASHER}}} 0.0 {t}")
        config = f'{CRASHER},gpu_memory_utilization="0.9",block_size="16",num_gpu_blocks="10"'
        vllm["vllm:cache_config_info"].append(f"vllm:cache_config_info{{{config}}} 1 {t}")


@pytest.fixture(scope="module")
def moving_url(tmp_path_factory):
    require_prometheus()
    with running(backfill(_text(), tmp_path_factory.mktemp("moving"))) as url:
        yield url


class Recording(PrometheusClient):
    sent: list[str] = []

    async def query(self, promql: str, at: float) -> Result:
        self.sent.append(promql)
        return await super().query(promql, at)


def _refusing(refused: str) -> type[Recording]:
    """A recording client that refuses each request holding `refused` (a query of it, or a merged request)."""

    class Refusing(Recording):
        async def query(self, promql: str, at: float) -> Result:
            if refused in promql:
                self.sent.append(promql)
                raise PrometheusError(f"{self.connection.url}/api/v1/query: bad_data: refused here", "query")
            return await super().query(promql, at)

    return Refusing


def _reads(url: str, offsets: list[int], facts_every_s: float = FACTS_EVERY_S, kind=Recording):
    """(sample, queries sent) of each refresh of one reader, at each offset in turn."""
    reader = FleetReader(Queries(look=0.1), FleetRules(), facts_every_s=facts_every_s)

    async def read():
        out = []
        for s in offsets:
            async with kind(Connection(url)) as client:
                client.sent = []
                out.append((await reader.read(client, T0 + s), client.sent))
        return out

    return asyncio.run(read())


def _joined(sent: list[str]) -> bool:
    """Whether a refresh read the join (the pod-to-GPU query) again."""
    return any(q == Queries().gpu_pods for q in sent)


def _mover(sample):
    (engine,) = [e for e in sample.engines if e.model_name == "m"]
    return engine


def _pools_read(sent: list[str]) -> bool:
    return Queries().pools in sent


def test_the_join_is_read_again_after_five_minutes_and_then_finds_the_pod_moved(moving_url):
    assert FACTS_EVERY_S == 300
    (first, sent1), (later, sent2), (again, sent3) = _reads(moving_url, [150, 350, 520])
    assert _mover(first).node == "node-x" and first.join_age_s == 0
    assert "0 s ago" not in _mover(first).join_reason
    # 200 s on, the join is the one read at 150 s: still found on node-x, and it says so with its age
    assert _joined(sent1) and not _joined(sent2)
    assert later.join_age_s == 200
    assert _mover(later).node == "node-x" and _mover(later).joined == "found"
    assert _mover(later).join_reason == _mover(first).join_reason  # its age is the sample's (the screen's header)
    # 370 s after the first read the join is read again: the pod is on node-y now
    assert _joined(sent3) and again.join_age_s == 0
    assert _mover(again).node == "node-y" and _mover(again).joined == "found"


def test_a_node_that_appears_reads_the_join_again_at_once(moving_url):
    (_, sent1), (before, sent2), (after, sent3) = _reads(moving_url, [560, 590, 610])
    assert _joined(sent1) and not _joined(sent2) and before.join_age_s == 30
    assert [n.name for n in after.nodes] == ["node-w", "node-x", "node-y", "node-z"]
    assert after.join_age_s == 0 and _joined(sent3)


def test_a_gpu_that_stops_reporting_reads_the_facts_again_at_once(moving_url):
    """node-w's second GPU stops at 400 s (past the 5 min lookback by 750 s): its node's memory in all
    drops, so the GPUs per node are read again then, not an hour later, and never counted stale."""
    (before, _), (after, sent) = _reads(moving_url, [620, 750], facts_every_s=3600)
    w = {s.name: s for s in before.nodes}["node-w"]
    assert w.gpus == 2 and before.join_age_s == 0
    w = {s.name: s for s in after.nodes}["node-w"]
    assert _joined(sent) and after.join_age_s == 0
    assert w.gpus == 1 and w.total_bytes == 81559 * 2**20 and set(w.unknown) <= {"other_processes_bytes"}


NAMES = ["a.b", "axb", 'q"|\\z.*', "plain"]
"""Node names are outside text: `.` and `|` would widen a regex, `"` and `\\` end or escape a string."""


def test_the_narrowed_query_matches_node_names_literally(tmp_path):
    require_prometheus()
    rows = []
    for n, name in enumerate(NAMES):
        quoted = name.replace("\\", "\\\\").replace('"', '\\"')
        rows.append(f'DCGM_FI_DEV_FB_FREE{{{GPU},UUID="GPU-{n}",Hostname="{quoted}"}} 1000 {T0}')
        rows.append(f'DCGM_FI_DEV_FB_FREE{{{GPU},UUID="GPU-h{n}",instance="h{quoted}:9400"}} 1000 {T0}')
    text = "# TYPE DCGM_FI_DEV_FB_FREE gauge\n" + "\n".join(rows) + "\n# EOF\n"

    async def ask(url: str, promql: str):
        async with PrometheusClient(Connection(url)) as client:
            return await client.query(promql, T0 + 10)

    with running(backfill(text, tmp_path)) as url:
        wanted = ["a.b", 'q"|\\z.*']
        promql = Queries(look=0.1).gpu_detail({"Hostname": wanted, "instance": [f"h{n}" for n in wanted]})
        found = asyncio.run(ask(url, promql)).series
    assert sorted(s.labels.get("Hostname") or s.labels["instance"] for s in found) == [
        "a.b",
        "ha.b:9400",
        'hq"|\\z.*:9400',
        'q"|\\z.*',
    ]


PER_GPU_OPERATION = re.compile(r"\bunless\b|\bon\s*\(|group_(left|right)|\)\s*[-+*/]\s*\(")
"""A binary operation between two vectors: matching series one by one (what a refresh must not ask for
every GPU; comparisons with a constant, `or` of selectors and scalar arithmetic are cheap)."""


def test_a_refresh_runs_no_per_gpu_operation_on_the_server(moving_url):
    (_, first), (_, then) = _reads(moving_url, [150, 160])
    assert then and len(then) < len(first)
    gpu_queries = [q for q in then if "DCGM_FI_DEV_FB" in q]
    assert gpu_queries and not [q for q in gpu_queries if PER_GPU_OPERATION.search(q)]
    assert PER_GPU_OPERATION.search("(a) unless on (node) (b)") and PER_GPU_OPERATION.search("(a) / (b)")


def test_the_pools_are_kept_between_refreshes_and_read_again_only_when_they_change(moving_url):
    """The engines' cache settings change only when an engine comes, goes or restarts: each refresh asks only
    what changed since they were read (an empty answer), not every engine's settings (a fifth of a refresh's
    bytes at 1,000 nodes)."""
    (first, sent1), (same, sent2), (later, sent3) = _reads(moving_url, [460, 460, 500], facts_every_s=3600)
    assert _pools_read(sent1) and not _pools_read(sent2) and not _pools_read(sent3)
    assert Queries().pools_changed(0) in sent2 and Queries().pools_changed(40) in sent3
    assert same.unknown == later.unknown == {} and same.state == later.state == "ok"
    assert _mover(later).num_gpu_blocks == _mover(first).num_gpu_blocks == 1200


def test_an_engine_that_restarts_with_other_settings_reads_the_pools_again(moving_url):
    """Read at 100 s (1,000 blocks), then at 450 s, when only the restarted engine's settings are left (the
    old series is past the lookback): the refresh finds the change and reads the pools again."""
    (before, _), (after, sent) = _reads(moving_url, [100, 450], facts_every_s=3600)
    assert _mover(before).num_gpu_blocks == 1000
    assert not _joined(sent) and _pools_read(sent)  # the pools alone, not the other slow facts
    assert Queries(look=0.1).engine_counters in sent  # and which counters its engines export
    assert _mover(after).num_gpu_blocks == 1200 and _mover(after).pool_tokens == 1200 * 16


def test_an_engine_that_left_is_not_kept_by_the_pools(moving_url):
    """The leaver's series are read until 400 s: at 450 s its pool, read with the facts at 300 s, is gone, and
    so is the engine (never one made of a kept pool alone)."""
    (before, _), (after, sent) = _reads(moving_url, [300, 450], facts_every_s=3600)
    assert "m2" in {e.model_name for e in before.engines}
    assert _pools_read(sent) and [e.model_name for e in after.engines] == ["m"]


def test_a_change_query_that_fails_reads_the_pools_again(moving_url, monkeypatch):
    """When the refresh cannot say whether the pools changed, it reads them again: the engines' settings are
    never kept on a guess, and a sample read whole is not called stale."""

    def refused(_queries: Queries, _since_s: float) -> str:
        return "vllm:cache_config_info offset 0ms"  # Prometheus refuses it: a bad_data error

    monkeypatch.setattr(Queries, "pools_changed", refused)
    (_, _), (later, sent) = _reads(moving_url, [460, 500], facts_every_s=3600)
    assert _pools_read(sent) and later.state == "ok" and later.unknown == {}
    assert _mover(later).num_gpu_blocks == 1200


def test_a_refresh_earlier_than_the_pools_read_again_reads_them_as_they_were_then(moving_url):
    """Read at 100 s (1,000 blocks), at 450 s (the engine restarted: the pools read again, 1,200 blocks), then
    at 100 s again (a fixed --at moved back, a clock stepped back) within the facts' time: the pools kept are
    from after that moment, and a change query cannot look forward, so they are read for that moment, as a
    fresh reader reads them."""
    (first, _), (_, _), (back, sent) = _reads(moving_url, [100, 450, 100], facts_every_s=3600)
    ((fresh, _),) = _reads(moving_url, [100])
    assert [_mover(s).num_gpu_blocks for s in (first, back, fresh)] == [1000, 1000, 1000]
    assert [e.num_gpu_blocks for e in back.engines] == [e.num_gpu_blocks for e in fresh.engines]
    assert _pools_read(sent)


def test_a_change_query_that_fails_in_a_refresh_that_reads_the_facts_again_is_no_failure(moving_url, monkeypatch):
    """node-z appears at 600 s: that refresh reads every slow fact again, the pools with them. Its change query,
    refused, asked what the pools read then answer: the sample is read whole, not stale."""

    def refused(_queries: Queries, _since_s: float) -> str:
        return "vllm:cache_config_info offset 0ms"  # Prometheus refuses it: a bad_data error

    monkeypatch.setattr(Queries, "pools_changed", refused)
    (_, _), (later, sent) = _reads(moving_url, [560, 610], facts_every_s=3600)
    assert _joined(sent) and _pools_read(sent)
    assert later.state == "ok" and later.unknown == {} and later.error is None


def test_reserved_memory_is_read_with_the_slow_facts_and_kept_between_refreshes(moving_url):
    """A driver holds the same reserved memory of a GPU while the GPU is there: a refresh reads used and free
    per node, and reserved comes with the facts (read again when a node's GPUs change)."""
    q = Queries(look=0.1)
    (first, sent1), (later, sent2) = _reads(moving_url, [150, 160], facts_every_s=3600)
    assert q.node_reserved in sent1 and q.node_reserved not in sent2
    assert "RESERVED" not in q.node_memory and "RESERVED" in q.node_reserved
    for sample in (first, later):
        node_x = next(n for n in sample.nodes if n.name == "node-x")
        assert node_x.reserved_bytes == 500 * 2**20 and node_x.total_bytes == 81559 * 2**20
        assert "reserved_bytes" not in node_x.unknown


def test_a_failed_reserved_query_leaves_reserved_unknown_with_the_reason(moving_url, monkeypatch):
    monkeypatch.setattr(Queries, "node_reserved", property(lambda _q: "vllm:cache_config_info offset 0ms"))
    ((sample, _),) = _reads(moving_url, [150])
    node_x = next(n for n in sample.nodes if n.name == "node-x")
    assert sample.state == "stale" and "node_reserved" in sample.unknown
    assert node_x.used_bytes == 500 * 2**20 and node_x.reserved_bytes is None and node_x.total_bytes is None
    assert node_x.unknown["reserved_bytes"] == "no sum of DCGM_FI_DEV_FB_RESERVED was read for the node"
    assert node_x.unknown["total_bytes"] == "reserved is unknown"


def test_a_node_whose_series_read_the_same_keeps_its_record_and_one_that_changed_is_made_again(moving_url):
    """The reader keeps each node's record between refreshes (fleet_nodes.nodes_of's memo): a refresh at the
    same moment reads the same series and gets the same records back; a later one (the ages moved, node-w lost
    a GPU, node-z came) gets records that equal those a new reader makes at that moment."""
    offsets = [300, 300, 305, 650, 710]
    kept = _reads(moving_url, offsets)
    assert all(a is b for a, b in zip(kept[0][0].nodes, kept[1][0].nodes, strict=True))
    assert not any(a is b for a, b in zip(kept[1][0].nodes, kept[2][0].nodes, strict=True))  # their ages moved
    for (sample, _), at in zip(kept, offsets, strict=True):
        ((fresh, _),) = _reads(moving_url, [at])
        assert [n.model_dump() for n in sample.nodes] == [n.model_dump() for n in fresh.nodes]
    shapes = {n.name: n.gpus for n in kept[-1][0].nodes}
    assert shapes == {"node-w": 1, "node-x": 1, "node-y": 1, "node-z": 1}
    assert {n.name: n.gpus for n in kept[0][0].nodes}["node-w"] == 2


def test_the_memo_forgets_a_node_no_longer_read():
    """The reader keeps its memo for the whole session: a node that left the fleet leaves the memo too."""
    memo: NodeMemo = {}
    nodes_of({}, {}, [], {"node-a": 1.0, "node-b": 1.0}, set(), memo=memo)
    assert memo.keys() == {"node-a", "node-b"}
    nodes_of({}, {}, [], {"node-a": 2.0}, set(), memo=memo)
    assert memo.keys() == {"node-a"}


def test_an_engine_that_came_in_a_new_job_and_went_down_is_down_in_the_refresh_that_finds_it(moving_url):
    """The refresh at 790 s asks for the targets down in the jobs its facts read (`vllm`); the pools changed (an
    engine came in job `vllm-new` at 760 s, its target down from 780 s), so they are read again, and the targets
    down asked again in the jobs they name: the engine is down in this refresh, as a fresh read says."""
    (_, _), (later, sent) = _reads(moving_url, [700, 790], facts_every_s=3600)
    assert any('up{job=~"vllm"}' in q for q in sent) and any('up{job=~"vllm|vllm-new"}' in q for q in sent)
    down = {"job": "vllm-new", "instance": "10.2.0.3:8000"}
    assert [{k: t.get(k) for k in down} for t in later.targets_down] == [down]
    crasher = next(e for e in later.engines if e.pod == "crasher")
    assert crasher.kv_usage_fraction is None and crasher.unknown["kv_usage_fraction"] == DOWN
    ((fresh, _),) = _reads(moving_url, [790])
    assert later.targets_down == fresh.targets_down


def test_a_new_jobs_engine_that_went_down_is_down_where_the_refresh_reads_the_facts_again(moving_url):
    """As above, but the refresh at 790 s is due to read the slow facts (the pools with them): its targets
    down were narrowed to the jobs of the facts it replaces, so they are asked again in the new ones."""
    (_, _), (later, sent) = _reads(moving_url, [700, 790], facts_every_s=60)
    assert _pools_read(sent) and any('up{job=~"vllm|vllm-new"}' in q for q in sent)
    ((fresh, _),) = _reads(moving_url, [790])
    assert later.targets_down == fresh.targets_down and len(later.targets_down) == 1
    assert "targets_down" not in later.unknown


def test_a_failed_ask_again_of_the_targets_down_says_so_beside_the_first_answer(moving_url):
    """The ask in the new job refused: the sample keeps the refresh's own answer (the old jobs' targets, none
    down) and says the query failed, never an engine down or up that nobody read."""
    refusing = _refusing('up{job=~"vllm|vllm-new"}')
    (_, _), (later, sent) = _reads(moving_url, [700, 790], facts_every_s=3600, kind=refusing)
    assert any('up{job=~"vllm|vllm-new"}' in q for q in sent)
    assert later.targets_down == [] and later.state == "stale"
    assert later.unknown["targets_down"].startswith("the query failed:") and "refused here" in later.error


def test_a_failed_first_ask_of_the_targets_down_answered_again_is_no_failure(moving_url):
    """The refresh's narrowed ask refused, the ask again in every job answered: the sample says what that
    answer says, and no failure it no longer has."""
    refusing = _refusing('up{job=~"vllm"}')
    (_, _), (later, sent) = _reads(moving_url, [700, 790], facts_every_s=3600, kind=refusing)
    assert any('up{job=~"vllm"}' in q for q in sent)
    assert [t.get("job") for t in later.targets_down] == ["vllm-new"]
    assert "targets_down" not in later.unknown and later.state == "ok", later.error


def test_a_refresh_asks_for_targets_down_in_the_jobs_read_with_the_pools(fleet_url):
    """The first read looks an hour back for the jobs that served a pool; a later refresh asks for the targets
    of the jobs the facts read (`pool_jobs`) and finds the same ones down (node-c's engine exited)."""
    (first, sent_first), (later, sent) = _reads(fleet_url, [AT - T0 - 15, AT - T0])
    assert any("last_over_time(" in q and "up" in q for q in sent_first)
    assert any('up{job=~"' in q for q in sent) and not any("group by (job)" in q for q in sent)
    (fresh, _), *_ = _reads(fleet_url, [AT - T0])
    assert later.targets_down and later.targets_down == fresh.targets_down

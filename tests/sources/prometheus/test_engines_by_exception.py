"""The fleet screen's refreshes read the engines' gauges by exception (`Queries.over`): one by one only where an
engine's KV usage is at or over the saturation fraction, the rest per model on the server. What the screen
shows of them must stay what the full read shows: the same findings, the same model table, over a real
Prometheus holding the test fleet (three engines over 90 %, one reporting NaN, two models of several engines).

And what it reads: no engine's gauges one by one between the pools' reads, every engine's again where the pools
are read again (an engine came, went or restarted)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from gpumem_tui.app.fleet_view import model_table
from gpumem_tui.diagnosis.findings.records import Thresholds
from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, PrometheusError, Result
from gpumem_tui.sources.prometheus.model_gauges import model_gauges, quiet_why
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.query_table import TABLE
from gpumem_tui.sources.prometheus.reader import FleetReader
from gpumem_tui.sources.prometheus.records import QUIET_FIELDS, FleetEngine
from tests.sources.prometheus.conftest import AT
from tests.sources.prometheus.server import T0, backfill, require_prometheus, running
from tests.sources.prometheus.test_fleet_reader import RESTART_S, Recording, _text
from tests.sources.prometheus.test_kept_recorded import _reads as reads

pytestmark = pytest.mark.prometheus
OVER = Thresholds().kv_saturated_fraction
FULL, BY_EXCEPTION = Queries(look=0.1), Queries(look=0.1, over=OVER)


def _reads(url: str, queries: Queries, moments: list[float]) -> list[tuple]:
    """(sample, queries sent) of each refresh of one reader at each moment in turn."""
    return reads(url, FleetReader(queries, FleetRules()), moments)


@pytest.fixture(scope="module")
def both(fleet_url):
    moments = [AT - 30, AT - 15, AT]
    return _reads(fleet_url, FULL, moments), _reads(fleet_url, BY_EXCEPTION, moments)


def test_between_the_pools_reads_no_engine_is_read_one_by_one(both):
    _, by_exception = both
    (first, sent1), (_, sent2), (_, sent3) = by_exception
    assert FULL.engines in sent1 and not first.models  # the first read reads every engine's
    for sent in (sent2, sent3):
        assert FULL.engines not in sent and BY_EXCEPTION.engines_over(OVER) in sent
        assert BY_EXCEPTION.model_gauges in sent and BY_EXCEPTION.engine_running(OVER) in sent  # some are over
    assert BY_EXCEPTION.model_counts in sent2 and BY_EXCEPTION.model_counts not in sent3  # then kept with the pools


def test_by_exception_the_screen_says_what_the_full_read_says(both):
    full, by_exception = both
    for (whole, _), (quick, _) in zip(full[1:], by_exception[1:], strict=True):
        assert quick.models and not whole.models
        t = Thresholds()
        judged, judged_whole = judge_fleet(quick, t), judge_fleet(whole, t)
        found = [f.model_dump() for f in judged]
        assert found == [f.model_dump() for f in judged_whole]
        assert any(f["finding"]["code"] == "kv_saturated" for f in found)  # the engines over 90 % said so
        assert model_table(quick, judged).rows == model_table(whole, judged_whole).rows
        assert [e.name for e in quick.engines] == [e.name for e in whole.engines]  # none lost, none twice
        said = {e.name: e for e in whole.engines}
        quiet = [e for e in quick.engines if e.unknown.get("kv_usage_fraction") == quiet_why(OVER)]
        assert quiet and len(quiet) < len(quick.engines)  # some read per model, some one by one
        for e in quick.engines:
            alike = said[e.name]
            if e.kv_usage_fraction is None and e.unknown.get("kv_usage_fraction") == quiet_why(OVER):
                assert alike.kv_usage_fraction is None or alike.kv_usage_fraction < OVER
                assert e.requests_running is None
                e = e.model_copy(update={f: getattr(alike, f) for f in QUIET_FIELDS})
                # only the quiet fields' reasons are the full read's: any other reason is the engine's own
                others = {k: why for k, why in e.unknown.items() if k not in QUIET_FIELDS}
                e = e.model_copy(
                    update={"unknown": others | {k: alike.unknown[k] for k in QUIET_FIELDS if k in alike.unknown}}
                )
            assert e.model_dump() == alike.model_dump()


def test_the_models_figures_are_the_engines(both):
    full, by_exception = both
    whole, quick = full[-1][0], by_exception[-1][0]
    for model, gauges in quick.models.items():
        engines = [e for e in whole.engines if e.model_name == model]
        usage = [e.kv_usage_fraction for e in engines]
        if None in usage:
            assert gauges.kv_usage_max is None and "kv_usage_max" in gauges.unknown
        else:
            assert gauges.kv_usage_max == pytest.approx(max(usage))
        running = [e.requests_running for e in engines]
        if None in running:
            assert gauges.requests_running is None
        else:
            assert gauges.requests_running == pytest.approx(sum(running))
    assert quick.models["m"].unknown["kv_usage_max"] == "an engine reported no number (NaN or below 0)"
    assert quick.models["m"].unknown["requests_running"] == "0 of its 1 engines report it"


def test_a_series_repeated_under_other_labels_is_not_summed_twice(tmp_path):
    """Two copies of one engine's series (two Services select its pod): the full read keeps one (`max by` the
    engine); a sum per model would count it twice, so the model's figure is unknown, with why."""
    require_prometheus()
    engine = 'model_name="m",engine="0",job="vllm",namespace="serving",pod="p",instance="10.0.0.1:8000"'
    lines = ["# TYPE vllm:num_requests_running gauge", "# TYPE vllm:kv_cache_usage_perc gauge"]
    for s in range(0, 61, 10):
        for service in ("a", "b"):
            lines.append(f'vllm:num_requests_running{{{engine},service="{service}"}} 4 {T0 + s}')
            lines.append(f'vllm:kv_cache_usage_perc{{{engine},service="{service}"}} 0.5 {T0 + s}')
    text = "\n".join(lines) + "\n# EOF\n"
    with running(backfill(text, tmp_path)) as url:

        async def read() -> dict[str, Result]:
            async with PrometheusClient(Connection(url)) as client:
                return {n: await client.query(TABLE[n].promql(FULL), T0 + 60) for n in ("model_gauges", "model_counts")}

        answers = asyncio.run(read())
    (gauges,) = model_gauges(answers, {}, [FleetEngine(model_name="m")], quiet_why(OVER)).values()
    assert gauges.requests_running is None and gauges.kv_usage_max is None
    assert gauges.unknown["requests_running"].startswith("2 series of it for 1 engine(s)")


@pytest.fixture(scope="module")
def restarting_url(tmp_path_factory):
    require_prometheus()
    with running(backfill(_text(), tmp_path_factory.mktemp("restarting"))) as url:
        yield url


def test_where_the_pools_are_read_again_every_engine_is_too(restarting_url):
    """The engine restarts with other settings at RESTART_S: the refresh after reads its pool again, and with it
    every engine's gauges, so the engine's record comes whole as with the slow facts."""
    moments = [T0 + RESTART_S - 40, T0 + RESTART_S - 20, T0 + RESTART_S + 10]
    (_, _), (before, sent2), (after, sent3) = _reads(restarting_url, BY_EXCEPTION, moments)
    assert FULL.engines not in sent2 and before.models
    assert FULL.pools in sent3 and FULL.engines in sent3 and BY_EXCEPTION.model_counts in sent3 and not after.models
    (mover,) = [e for e in after.engines if e.model_name == "m"]
    assert mover.kv_usage_fraction == 0.5 and mover.num_gpu_blocks == 1200


GPU = 'gpu="0",modelName="NVIDIA H100 80GB HBM3",job="dcgm-exporter",UUID="GPU-x",Hostname="node-x"'
Engine = tuple[str, float, int, int, int]
"""An engine's labels, KV usage, requests running and waiting, KV blocks at one moment."""


def _engine(model: str, pod: str, at: int) -> str:
    """An engine's labels: pod `pod` serving `model` at 10.2.0.`at`."""
    return f'model_name="{model}",engine="0",job="vllm",namespace="serving",pod="{pod}",instance="10.2.0.{at}:8000"'


def _one_gpu(seconds: range, engines: Callable[[int], list[Engine]], preempting: bool = False) -> str:
    """A node of one GPU and, at each second of `seconds`, the engines `engines` gives; `preempting`: each
    exports the preemption counter (at 0)."""
    names = ["DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "vllm:kv_cache_usage_perc", "vllm:num_requests_running"]
    names += ["vllm:num_requests_waiting", *(["vllm:num_preemptions_total"] if preempting else [])]
    rows: dict[str, list[str]] = {name: [] for name in (*names, "vllm:cache_config_info")}
    for s in seconds:
        t = T0 + s
        rows["DCGM_FI_DEV_FB_USED"].append(f'DCGM_FI_DEV_FB_USED{{{GPU},instance="node-x:9400"}} 500 {t}')
        rows["DCGM_FI_DEV_FB_FREE"].append(f'DCGM_FI_DEV_FB_FREE{{{GPU},instance="node-x:9400"}} 80559 {t}')
        for engine, usage, busy, waiting, blocks in engines(s):
            for name, value in zip(names[2:], (usage, busy, waiting, 0), strict=False):
                rows[name].append(f"{name}{{{engine}}} {value} {t}")
            config = f'{engine},gpu_memory_utilization="0.9",block_size="16",num_gpu_blocks="{blocks}"'
            rows["vllm:cache_config_info"].append(f"vllm:cache_config_info{{{config}}} 1 {t}")
    out = []
    for name, lines in rows.items():
        kind = "counter" if name == "vllm:num_preemptions_total" else "gauge"
        out += [f"# TYPE {name.removesuffix('_total')} {kind}", *lines]
    return "\n".join(out) + "\n# EOF\n"


def _restarting_with_a_hot_engine() -> str:
    """Engine `mover` (KV 0.5) restarts with more KV blocks at RESTART_S; engine `hot` stays at KV 0.95 with 3
    requests running and 2 waiting; engine `late`, of hot's model, comes at RESTART_S + 30 (KV 0.3, 1 running);
    one GPU, so the node reports."""
    late, mover, hot = _engine("h", "late", 8), _engine("m", "mover", 1), _engine("h", "hot", 9)
    return _one_gpu(
        range(0, RESTART_S + 61, 10),
        lambda s: [
            (mover, 0.5, 1, 0, 1000 if s < RESTART_S else 1200),
            (hot, 0.95, 3, 2, 100),
            *([(late, 0.3, 1, 0, 100)] if s >= RESTART_S + 30 else []),
        ],
    )


def _read_refusing(
    tmp_path, moments: list[float], refused: str | tuple[str, ...], at_read: int, text: str | None = None
) -> list[tuple]:
    """(sample, queries sent) of each refresh by exception of one reader over `text` (or
    `_restarting_with_a_hot_engine`), the queries `refused` refused at the refresh `at_read` (its index) alone."""
    require_prometheus()

    class RefusingThen(Recording):
        refuse = False

        async def query(self, promql: str, at: float) -> Result:
            if self.refuse and promql in ((refused,) if isinstance(refused, str) else refused):
                self.sent.append(promql)
                raise PrometheusError(f"{self.connection.url}/api/v1/query: bad_data: refused here", "query")
            return await super().query(promql, at)

    reader = FleetReader(BY_EXCEPTION, FleetRules())
    with running(backfill(text or _restarting_with_a_hot_engine(), tmp_path)) as url:

        async def read() -> list[tuple]:
            out = []
            for i, at in enumerate(moments):
                async with RefusingThen(Connection(url)) as client:
                    client.sent, client.refuse = [], i == at_read
                    out.append((await reader.read(client, at), client.sent))
            return out

        return asyncio.run(read())


def test_where_every_engine_read_with_the_pools_fails_the_refresh_by_exception_stands(tmp_path):
    """The pools changed (`mover` restarted), and the read of every engine's gauges asked with them was refused:
    the refresh's own reading by exception is whole still, so the engine over the fraction has its requests
    running (asked after its KV usage, as where the pools did not change) and the sample does not say the
    engines' query failed beside engines it read."""
    refused = FULL.engines
    moments = [T0 + RESTART_S - 40, T0 + RESTART_S - 20, T0 + RESTART_S + 10]
    *_, (after, sent) = _read_refusing(tmp_path, moments, refused, len(moments) - 1)
    assert FULL.pools in sent and refused in sent  # the pools read again, every engine's gauges refused
    (hot,) = [e for e in after.engines if e.model_name == "h"]
    assert hot.kv_usage_fraction == 0.95 and hot.requests_running == 3, hot.unknown
    assert "engines" not in after.unknown
    assert [f.finding.code for f in judge_fleet(after, Thresholds())].count("kv_saturated") == 1


def test_a_failed_count_of_the_models_engines_read_with_the_pools_is_asked_again(tmp_path):
    """Engine `late` came (the pools read again) and the count of each model's engines asked with them was
    refused: the refresh after counts them again, rather than judge the model's figures by the count of the
    pools before (1 engine of `h` where there are 2 now: 'one stopped reporting', which none did)."""
    refused = BY_EXCEPTION.model_counts
    moments = [T0 + RESTART_S + 10, T0 + RESTART_S + 20, T0 + RESTART_S + 35, T0 + RESTART_S + 45]
    (_, _), (_, sent2), (_, sent3), (after, sent4) = _read_refusing(tmp_path, moments, refused, 2)
    assert refused in sent2 and FULL.pools in sent3 and refused in sent3  # counted, then refused with the pools
    assert FULL.engines not in sent4 and refused in sent4  # by exception, and counted again
    gauges = after.models["h"]
    assert gauges.unknown == {} and gauges.kv_usage_max == 0.95 and gauges.requests_running == 4


def _crossing() -> str:
    """Engine `hot` at KV 0.95 (3 running, 2 waiting); `mover` at 0.5, at 0.95 from 210 s; `late` comes at 190 s
    (its preemption rate pending a sample); each exports the preemption counter (at 0); one GPU."""
    engines = {name: _engine("m", name, i) for i, name in enumerate(("hot", "mover", "late"), start=1)}

    def at(s: int) -> list[Engine]:
        found = []
        for name, engine in engines.items():
            if name == "late" and s < 190:
                continue
            usage = 0.95 if name == "hot" or (name == "mover" and s >= 210) else 0.3
            busy, waiting = (3, 2) if name == "hot" else (1, 0)
            found.append((engine, usage, busy, waiting, 100))
        return found

    return _one_gpu(range(0, 261, 10), at, preempting=True)


def test_an_engine_crossing_the_fraction_is_no_engine_that_came(tmp_path):
    """The counters read again by exception (`late`'s preemption rate was pending) are the counters of every
    engine the pools name, not only of those over the fraction then (`hot`): `mover` crossing it later is no
    engine that came since, and the counters (one series an engine and gauge) are not asked again for it."""
    require_prometheus()
    moments = [T0 + s for s in (160, 170, 190, 195, 205, 215)]
    with running(backfill(_crossing(), tmp_path)) as url:
        reads = _reads(url, BY_EXCEPTION, moments)
    counters = BY_EXCEPTION.engine_counters
    (_, _), (_, _), (_, sent3), (_, sent4), (_, sent5), (after, sent6) = reads
    assert FULL.pools in sent3 and counters in sent4 and counters in sent5  # late came, its rate pending
    assert FULL.engines not in sent6 and BY_EXCEPTION.engines_over(OVER) in sent6
    assert {e.pod for e in after.engines if e.kv_usage_fraction is not None} == {"hot", "mover"}  # mover crossed
    assert counters not in sent6


def test_where_the_pools_and_every_engine_read_with_them_fail_no_engine_is_left_out(tmp_path):
    """The pools changed and both their read and every engine's were refused: the quiet engines are known by the
    pools alone, so the refresh cannot read by exception; it says the engines are unknown, as a full read whose
    two queries failed does, rather than list the engine over the fraction alone as if it were the fleet's."""
    refused = (FULL.engines, FULL.pools)
    moments = [T0 + RESTART_S - 40, T0 + RESTART_S - 20, T0 + RESTART_S + 10]
    *_, (after, sent) = _read_refusing(tmp_path, moments, refused, len(moments) - 1)
    assert FULL.pools in sent and FULL.engines in sent
    assert "engines" in after.unknown and "pools" in after.unknown and not after.models
    assert not [e for e in after.engines if e.unknown.get("kv_usage_fraction") == quiet_why(OVER)]
    assert all(e.kv_usage_fraction is None for e in after.engines)  # as the full read's: its gauges' read failed


def test_an_engine_no_pool_names_is_not_left_out(tmp_path):
    """Engine `mover` sends its gauges but no pool (`vllm:cache_config_info`): a refresh by exception finds its
    quiet engines by the pools, so where the last full read named an engine no pool names, every engine's gauges
    are read, and `mover` stays on the screen as in `fleet check`, its model's figures its own."""
    text = "\n".join(
        line
        for line in _restarting_with_a_hot_engine().splitlines()
        if not (line.startswith("vllm:cache_config_info") and 'pod="mover"' in line)
    )
    moments = [T0 + RESTART_S - 40, T0 + RESTART_S - 20, T0 + RESTART_S + 10]
    for sample, _ in _read_refusing(tmp_path, moments, (), -1, text + "\n"):
        (mover,) = [e for e in sample.engines if e.pod == "mover"]
        assert mover.kv_usage_fraction == 0.5 and mover.requests_running == 1


def test_the_models_counts_kept_with_the_facts_keep_what_was_made_of_the_pools(restarting_url):
    """The first refresh by exception reads the models' counts and keeps them with the facts: what was made of
    the pools and counters (the engines' records, 1 s at 10^4 engines) is kept with them, not made again."""
    reader = FleetReader(BY_EXCEPTION, FleetRules())
    reads(restarting_url, reader, [T0 + 40])
    assert reader.facts is not None and "model_counts" not in reader.facts.results
    made = reader.facts.engines
    (_, sent), *_ = reads(restarting_url, reader, [T0 + 60])
    assert BY_EXCEPTION.model_counts in sent and "model_counts" in reader.facts.results
    assert reader.facts.engines is made

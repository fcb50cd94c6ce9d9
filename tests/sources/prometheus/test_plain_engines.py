"""A plain engine's short path (fleet_engines._plain) makes the records the general one (`_row`, `_gauges`)
makes: every field, the `unknown` words in their order, the engines' order, refresh after refresh with the
records and order kept between them. Each engine here is made to take one turn of the general path (NaN,
negative, infinite, missing series, asleep, target down, no pool, an unknown pool field, waiting or preemption
series not exported, the quiet queries failed, a preemption rate pending, requests swapped), beside plain ones."""

from __future__ import annotations

import math

import pytest

from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus import fleet_engines
from gpumem_tui.sources.prometheus.client import Result, Series
from gpumem_tui.sources.prometheus.engine_facts import EngineFacts
from gpumem_tui.sources.prometheus.fleet import GpuIdentity
from gpumem_tui.sources.prometheus.fleet_engines import Join, JoinIndex, engines_of
from gpumem_tui.sources.prometheus.queries import RATE_PENDING, Queries
from gpumem_tui.sources.prometheus.reader import FleetReader

NAN, INF = math.nan, math.inf
KV, RUN, WAIT = "vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting"
SGLANG = ("sglang:token_usage", "sglang:num_running_reqs")
TWINS = ("third", "other")
"""The jobs of two engines alike in all the engines are sorted by: listed in the order they were found."""
PLAIN = ("plain", "busy", "asleep", "old-name", "sglang", "zero-minus", "swapped", "down")
"""The engines whose every reading is plain (the short path's) when no quiet query failed."""


def _labels(name: str, podless: bool = False) -> dict[str, str]:
    where = {"instance": f"host-{name}:8000"} if not podless else {"instance": f"{name}:800{len(name) % 3}"}
    pod = {} if podless else {"namespace": "serving", "pod": name}
    return {"model_name": "m" if name != "sglang" else "s", "engine": "0", "job": "vllm", **pod, **where}


def _series(name: str, labels: dict[str, str], value: float) -> Series:
    return Series({"__name__": name, **labels}, value, 0.0)


def _answers(shift: float, gone: str = "", waits: bool = False) -> dict[str, list[Series]]:
    """The answers of a fleet of every kind of engine; `shift` moves each reading (a later refresh); `gone`: an
    engine whose gauges are not there (its pool alone names it: it comes last of the engines found); `waits`:
    `gone` and a twin that only a pool names wait (found before the engines the pools alone name)."""
    usage: list[Series] = []
    readings = {
        "plain": (0.5, 2.0),
        "busy": (0.9, 7.0),
        "asleep": (0.0, 0.0),
        "nan-kv": (NAN, 1.0),
        "minus-running": (0.2, -1.0),
        "inf-kv": (INF, 1.0),
        "no-running": (0.3, None),
        "no-kv": (None, 1.0),
        "down": (0.4, 1.0),
        "no-pool": (0.4, 1.0),
        "no-size": (0.4, 1.0),
        "no-waiting": (0.4, 1.0),
        "no-rate": (0.4, 1.0),
        "pending": (0.4, 1.0),
        "zero-minus": (-0.0, 0.0),
        "swapped": (0.6, 3.0),
        "swapped-nan": (0.6, 3.0),
        "nan-waiting": (0.6, 3.0),
        "nan-rate": (0.6, 3.0),
    }
    for name, (kv, running) in readings.items():
        labels = _labels(name)
        if name == gone:
            continue
        if kv is not None:
            usage.append(_series(KV, labels, kv + shift if kv else kv))
        if running is not None:
            usage.append(_series(RUN, labels, running + shift if running else running))
    usage.append(_series("vllm:gpu_cache_usage_perc", _labels("old-name"), 0.1 + shift))
    usage.append(_series(RUN, _labels("old-name"), 1.0))
    usage += [_series(SGLANG[0], _labels("sglang"), 0.7), _series(SGLANG[1], _labels("sglang"), 4.0 + shift)]
    for name in ("podless-a", "podless-b", "lone"):  # a and b share a host: not joined; lone is assumed
        labels = _labels(name, podless=True) | ({"instance": "bare:8000"} if name != "lone" else {})
        labels |= {"engine": name[-1]} if name != "lone" else {}
        usage += [_series(KV, labels, 0.3 + shift), _series(RUN, labels, 1.0)]
    pools = [_pool(name) for name in [*readings, "old-name", "pool-only"] if name not in ("no-pool",)]
    pools.append(Series({"__name__": "sglang:max_total_num_tokens", **_labels("sglang")}, 5000.0, 0.0))
    pools += [_pool(name, podless=True) for name in ("podless-a", "podless-b", "lone")]
    pools += [_pool("twin") for _ in TWINS]  # the twins differ in job alone: found first, listed first
    pools[-2:] = [Series(s.labels | {"job": job}, 1.0, 0.0) for s, job in zip(pools[-2:], TWINS, strict=True)]
    counters = []
    for name in [*readings, "old-name", "sglang", "pool-only", "podless-a", "podless-b", "lone"]:
        gauges = {"no-waiting": ("preemptions_per_min",), "no-rate": ("requests_waiting",)}.get(
            name, ("requests_waiting", "preemptions_per_min")
        )
        if name == "pending":
            gauges = ("requests_waiting", RATE_PENDING)
        counters += [Series({**_labels(name), "gauge": g}, 0.0, 0.0) for g in gauges]
    counters += [Series({**_labels("twin"), "job": job, "gauge": "requests_waiting"}, 0.0, 0.0) for job in TWINS]
    waiting = [
        _series(WAIT, _labels(name), value) for name, value in (("busy", 3.0), ("nan-waiting", NAN)) if name != gone
    ]
    if waits:
        waiting += [_series(WAIT, _labels(gone), 1.0), _series(WAIT, _labels("twin") | {"job": TWINS[1]}, 2.0)]
    return {
        "usage": usage,
        "pools": pools,
        "preemptions": [_series("rate", _labels("busy"), 1.5 + shift), _series("rate", _labels("nan-rate"), NAN)],
        "waiting": waiting,
        "swapped": [_series("s", _labels("swapped"), 2.0), _series("s", _labels("swapped-nan"), NAN)],
        "counters": counters,
    }


def _pool(name: str, podless: bool = False) -> Series:
    labels = _labels(name, podless)
    if podless and name != "lone":
        labels |= {"instance": "bare:8000", "engine": name[-1]}
    size = {} if name == "no-size" else {"num_gpu_blocks": "100", "block_size": "16"}
    return Series({"__name__": "vllm:cache_config_info", **labels, **size, "cache_dtype": "auto"}, 1.0, 0.0)


def _join() -> Join:
    """A join: each call another (what the reader keeps is kept per join, by identity)."""
    gpus = [GpuIdentity(f"node-{n}", f"GPU-{n}", None, "0", ("serving/plain",) if n == 0 else ()) for n in range(3)]
    gpus.append(GpuIdentity("bare", "GPU-s", None, "0", ()))
    index = JoinIndex.of(gpus)
    return Join(index, {"bare": {"H100": {"USED": 1}}, "lone": {"H100": {"USED": 2}}}, True)


def _read(
    answers: dict[str, list[Series]],
    failures: dict[str, str],
    known: EngineFacts | None,
    join: Join,
    keys: FleetReader | None = None,
    quiet: str | None = None,
):
    counters = None if "engine_counters" in failures else answers["counters"]
    return engines_of(
        answers["usage"],
        answers["pools"],
        answers["preemptions"],
        failures,
        {fleet_engines.engine_key(_labels("asleep")): "weights_offloaded"},
        {("vllm", "host-down:8000")},
        join,
        answers["waiting"],
        counters,
        known,
        None if keys is None else keys._keys({"engines": Result(answers["usage"])}),  # as the reader hands them
        swapped=answers["swapped"],
        quiet=quiet,
    )


def _said(engines) -> list[tuple]:
    return [(e.__dict__, e.model_fields_set, e.model_dump_json(), list(e.unknown.items())) for e in engines]


FAILURES = ({}, {"waiting": "the query failed: w", "preemptions": "the query failed: p"}, {"engine_counters": "c"})


@pytest.mark.parametrize("failures", FAILURES)
def test_the_short_path_makes_the_general_paths_records(failures, monkeypatch):
    first, later = _answers(0.0), _answers(0.05)
    join = _join()
    counters = None if "engine_counters" in failures else first["counters"]
    known = EngineFacts.of(first["pools"], counters, failures)
    aged = _join()  # one join over the later ones: the records, order and layout made with it kept
    gone, waits = _answers(0.1, gone="busy"), _answers(0.1, gone="busy", waits=True)
    reads = ((first, join), (later, join), (later, aged), (gone, aged), (waits, aged), (gone, aged))
    keys = FleetReader(Queries(), FleetRules())  # the very list the last answer's were where the labels are alike
    short = [_said(_read(a, failures, known, j, keys)) for a, j in reads]
    taken = []
    plain = fleet_engines._plain
    monkeypatch.setattr(fleet_engines, "_plain", lambda fact, *a: taken.append(fact.static["pod"]) or plain(fact, *a))
    _read(first, failures, EngineFacts.of(first["pools"], counters, failures), join)
    assert set(taken) >= ({*PLAIN} if not failures else set())  # the short path was tried where it can be
    monkeypatch.setattr(fleet_engines, "_plain", lambda *_: None)  # the general path alone
    known = EngineFacts.of(first["pools"], counters, failures)
    general = [_said(_read(a, failures, known, j)) for a, j in reads]
    assert short == general
    anew = [_said(_read(a, failures, None, j)) for a, j in reads]
    assert anew == general


def test_the_fleet_here_has_every_kind_of_engine():
    """The comparison above is over engines that differ: plain and not, joined every way, each kind's words."""
    engines = _read(_answers(0.0), {}, None, _join())
    by_pod = {e.pod or e.instance: e for e in engines}
    assert {e.joined for e in engines} == {"found", "assumed", "not joined"}
    assert by_pod["nan-kv"].unknown["kv_usage_fraction"] == "the engine reported NaN: no reading"
    assert by_pod["down"].kv_usage_fraction is None and "requests_waiting" in by_pod["down"].unknown
    assert by_pod["no-waiting"].requests_waiting is None and by_pod["no-rate"].preemptions_per_min is None
    assert by_pod["pending"].preemptions_per_min is None and by_pod["no-size"].pool_tokens is None
    assert by_pod["asleep"].sleep_state == "weights_offloaded" and by_pod["busy"].requests_waiting == 3.0
    assert by_pod["swapped"].requests_swapped == 2.0 and "requests_swapped" in by_pod["swapped-nan"].unknown
    assert by_pod["sglang"].kind == "sglang" and by_pod["no-pool"].pool_tokens is None
    assert math.copysign(1.0, by_pod["zero-minus"].kv_usage_fraction) == -1.0
    assert [e.model_name for e in engines] == sorted(e.model_name for e in engines)


def test_the_reader_hands_the_same_keys_while_the_answer_carries_the_same_labels():
    """What keeps the engines' layout: the last answer's keys, the very list, for series labelled alike (read
    anew, so other dicts); new keys where a series is gone or its labels changed."""
    reader, usage = FleetReader(Queries(), FleetRules()), _answers(0.0)["usage"]
    first = reader._keys({"engines": Result(usage)})
    named = reader._named({"engines": Result(usage)})
    again = [Series(dict(s.labels), s.value + 1.0, 1.0) for s in usage]
    assert reader._keys({"engines": Result(again)}) is first
    assert reader._named({"engines": Result(again)}) is named == frozenset(first)
    relabelled = [*again[:-1], Series({**again[-1].labels, "engine": "9"}, 1.0, 1.0)]
    keys = reader._keys({"engines": Result(relabelled)})
    assert keys is not first and keys == [fleet_engines.engine_key(s.labels) for s in relabelled]
    assert reader._named({"engines": Result(relabelled)}) == frozenset(keys) != named
    fewer = reader._keys({"engines": Result(relabelled[:-1])})  # the same labels, but one series less
    assert fewer is not keys and fewer == keys[:-1]


QUIET = "its KV usage is under 90 %"
OVER = ("busy", "inf-kv", "sglang", "nan-waiting", "down")
"""The engines a refresh by exception reads the gauges of here (their KV usage at or over the fraction)."""
CALM = ("plain", "zero-minus", "pool-only")
"""Engines a refresh by exception reads nothing of, each exporting both counters."""


def _by_exception(answers: dict[str, list[Series]]) -> dict[str, list[Series]]:
    """`answers` as a refresh by exception reads them: the gauges of OVER alone."""
    return answers | {"usage": [s for s in answers["usage"] if s.labels.get("pod") in OVER]}


@pytest.mark.parametrize("failures", FAILURES)
def test_by_exception_the_kept_records_are_the_general_paths(failures, monkeypatch):
    """A refresh by exception (`quiet`): an engine it read nothing of keeps its record, the very object, refresh
    after refresh; and each record is what the general path
    makes: its KV usage and requests running unknown for `quiet`, its queue 0 where it exports the counters."""
    first, later = _by_exception(_answers(0.0)), _by_exception(_answers(0.05))
    gone, waits = _by_exception(_answers(0.1, gone="busy")), _by_exception(_answers(0.1, gone="busy", waits=True))
    join, aged = _join(), _join()
    counters = None if "engine_counters" in failures else first["counters"]
    known = EngineFacts.of(first["pools"], counters, failures)
    whole = _answers(0.0)  # a read of every engine's first (the slow facts'): the records kept are made quiet
    reads = [(whole, join, None), (first, join, QUIET), (later, join, QUIET), (later, aged, QUIET)]
    reads += [(gone, aged, QUIET), (waits, aged, QUIET), (gone, aged, QUIET), (whole, aged, None), (first, aged, QUIET)]
    keys = FleetReader(Queries(), FleetRules())
    made = [_read(a, failures, known, j, keys, quiet) for a, j, quiet in reads][1:]
    plain = {e.pod: e for e in made[1] if e.pod == "plain"}["plain"]
    assert plain.kv_usage_fraction is None and plain.requests_running is None
    assert [plain.unknown[name] for name in ("kv_usage_fraction", "requests_running")] == [QUIET, QUIET]
    assert (plain.requests_waiting, plain.preemptions_per_min) == ((0.0, 0.0) if not failures else (None, None))
    busy = {e.pod: e for e in made[1]}["busy"]
    assert (busy.kv_usage_fraction, busy.requests_running) == pytest.approx((0.95, 7.05)) and not busy.unknown
    if not failures:  # the quiet engines' records kept: the very objects, and the list while all are
        kept = [(a, b) for a, b in zip(made[0], made[1], strict=True) if a.pod in CALM]
        assert len(kept) == 3 and all(a is b for a, b in kept) and made[0] is not made[1]
        calm = {name: [s for s in answer if s.labels.get("pod") in CALM] for name, answer in first.items()}
        calmly = EngineFacts.of(calm["pools"], calm["counters"], failures)
        again = [_read(calm, failures, calmly, join, keys, QUIET) for _ in range(2)]
        assert len(again[0]) == len(CALM) and all(a is b for a, b in zip(*again, strict=True))
    short = [_said(engines) for engines in made]
    monkeypatch.setattr(fleet_engines, "_plain", lambda *_: None)
    monkeypatch.setattr(fleet_engines, "_untouched", lambda *_: False)
    anew = EngineFacts.of(first["pools"], counters, failures)
    general = [_said(_read(a, failures, anew, j, None, quiet)) for a, j, quiet in reads][1:]
    assert short == general


@pytest.mark.parametrize("quiet", [None, QUIET])
def test_counters_read_again_keep_the_records_whose_counters_read_the_same(quiet):
    """The counters read again (an engine's rate pending): the records of the engines whose counters read as
    before are kept, the very objects; every record is what facts made anew from the same answers make."""
    first, later = _answers(0.0), _answers(0.05)
    if quiet is not None:
        first, later = _by_exception(first), _by_exception(later)
    join, keys = _join(), FleetReader(Queries(), FleetRules())
    known = EngineFacts.of(first["pools"], first["counters"], {})
    before = {e.pod: e for e in _read(first, {}, known, join, keys, quiet)}
    rated = [c for c in first["counters"] if not (c.labels.get("pod") == "plain" and "preempt" in c.labels["gauge"])]
    again = known.with_counters(rated)
    kept = _read(later, {}, again, join, keys, quiet)
    anew = _read(later, {}, EngineFacts.of(first["pools"], rated, {}), join, None, quiet)
    assert _said(kept) == _said(anew)
    after = {e.pod: e for e in kept}
    assert after["plain"].preemptions_per_min is None and before["plain"].preemptions_per_min == 0.0
    if quiet is not None:  # the calm ones read nothing of: their very records
        assert all(after[pod] is before[pod] for pod in CALM if pod != "plain")

"""`vllm:engine_sleep_state{sleep_state!="awake"} == 1`: an engine put to sleep has freed its weights or KV
cache on purpose, so neither is held against its plan; the fleet says it was not judged, and why. A small
backfill of its own: two nodes whose engines state the same short pool, one of them asleep."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.cli import main
from gpumem_tui.demo.fleet_series import FleetNodeSpec, fleet_series, series_rows
from tests.sources.prometheus.server import T0, backfill, require_prometheus, running

pytestmark = pytest.mark.prometheus

SHORT = {"num_gpu_blocks": "9000"}
SPECS = (
    FleetNodeSpec("s-awake", "healthy-8b", "exported_pod", "Hostname", settings=SHORT),
    FleetNodeSpec("s-asleep", "healthy-8b", "exported_pod", "Hostname", settings=SHORT),
)
END_S, STEP_S = 60, 15


def _sleep_series() -> str:
    """s-asleep's engine: weights_offloaded 1, awake 0, with the labels of its other vLLM series."""
    engines = {
        tuple(sorted(labels.items()))
        for name, labels, _, _ in series_rows(SPECS, END_S, STEP_S)
        if name == "vllm:kv_cache_usage_perc" and labels.get("pod", "").startswith("vllm-s-asleep")
    }
    (labels,) = engines
    lines = ["# TYPE vllm:engine_sleep_state gauge"]
    for state, value in (("awake", 0), ("weights_offloaded", 1), ("discard_all", 0)):
        text = ",".join(f'{k}="{v}"' for k, v in (*labels, ("sleep_state", state)))
        lines += [f"vllm:engine_sleep_state{{{text}}} {value} {T0 + s}" for s in range(0, END_S + 1, STEP_S)]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    require_prometheus()
    text = fleet_series(SPECS, END_S, STEP_S).removesuffix("# EOF\n") + _sleep_series() + "# EOF\n"
    with running(backfill(text, tmp_path_factory.mktemp("sleep"))) as address:
        yield address


def _check(capsys, url: str) -> dict:
    main(["fleet", "check", "--prometheus", url, "--at", str(T0 + END_S), "--json"])
    return json.loads(capsys.readouterr().out)


def test_a_sleeping_engine_is_not_held_against_its_plan(url, capsys):
    report = _check(capsys, url)
    codes = {(f["node"], f["code"]) for f in report["findings"]}
    assert ("s-awake", "kv_pool_short") in codes and ("s-awake", "weights_mismatch") in codes
    asleep = [f for f in report["findings"] if f["node"] == "s-asleep"]
    assert not [f for f in asleep if f["code"] in ("kv_pool_short", "weights_mismatch", "kv_saturated")]
    (note,) = [f for f in asleep if f["code"] == "plan_note"]
    assert note["severity"] == "info" and "asleep (weights_offloaded)" in note["title"]


def test_the_snapshot_says_which_engine_sleeps(url, capsys):
    main(["fleet", "snapshot", "--prometheus", url, "--at", str(T0 + END_S), "--json"])
    snap = json.loads(capsys.readouterr().out)
    states = {e["node"]: e["sleep_state"] for e in snap["engines"]}
    assert states == {"s-awake": None, "s-asleep": "weights_offloaded"}

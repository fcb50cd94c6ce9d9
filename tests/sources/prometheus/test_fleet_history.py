"""The fleet's history (sources/prometheus/history.py) read with range queries from a real Prometheus, and
the demo's in-process answers (demo/fleet_history.py) over the same simulated fleet."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from gpumem_tui.demo.fleet_history import demo_history
from gpumem_tui.demo.fleet_series import series_rows
from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
from gpumem_tui.sources.prometheus.history import parse_span, read_history, step_for
from gpumem_tui.sources.prometheus.queries import Queries, parse_selector
from gpumem_tui.sources.prometheus.reader import FleetReader
from tests.sources.prometheus.conftest import AT, END_S, FLEET, STEP_S

WITHOUT_NAN_NODE = parse_selector('{Hostname!="node-nan", instance!="node-nan:8000"}')
"""The backfilled fleet's hand-written NaN node, which the simulator does not make."""


def _read(url: str, queries: Queries, span_s: float):
    async def read():
        async with PrometheusClient(Connection(url)) as client:
            return await read_history(client, queries, AT, span_s)

    return asyncio.run(read())


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


@pytest.mark.prometheus
def test_the_demo_history_is_what_a_real_prometheus_answers(fleet_url):
    real = _read(fleet_url, Queries(WITHOUT_NAN_NODE), 120)
    demo = demo_history(series_rows(FLEET, END_S, STEP_S), AT - 120, AT, step_for(120))
    assert (real.start, real.end, real.step_s) == (demo.start, demo.end, demo.step_s)
    assert (
        set(real.series)
        == set(demo.series)
        == {
            "used_bytes",
            "free_bytes",
            "reserved_bytes",
            "kv_usage_max",
            "waiting",
            "preemptions_per_min",
        }
    )
    for name, points in real.series.items():
        assert len(points) == len(demo.series[name]) == 121
        assert all(_close(a, b) for a, b in zip(points, demo.series[name], strict=True)), name
    assert max(p for p in real.series["kv_usage_max"] if p is not None) > 0.9  # kv-pressure saturates


@pytest.mark.prometheus
def test_the_newest_point_is_the_sum_the_fleet_sample_shows(fleet_url):
    """One answer per question: the history's last point and the sample's node sums read the same GPUs."""
    queries = Queries(WITHOUT_NAN_NODE)

    async def read():
        async with PrometheusClient(Connection(fleet_url)) as client:
            return await FleetReader(queries, FleetRules()).read(client, AT)

    sample = asyncio.run(read())
    history = _read(fleet_url, queries, 600)
    dcgm = [n for n in sample.nodes if n.memory_from == "dcgm-exporter"]
    assert history.series["used_bytes"][-1] == sum(n.used_bytes or 0 for n in dcgm)
    assert history.series["free_bytes"][-1] == sum(n.free_bytes or 0 for n in dcgm)


@pytest.mark.prometheus
def test_a_nan_reading_is_a_gap_never_a_smaller_sum(fleet_url):
    from gpumem_tui.app.fleet_history_view import history_lines

    history = _read(fleet_url, Queries(), 120)
    assert history.series["used_bytes"][-1] is None  # node-nan's FB_USED is NaN: the fleet's sum is unknown
    assert history.series["free_bytes"][-1] is not None
    # the gap says why, as any unknown field does
    assert "NaN" in history.gaps["used_bytes"] and "free_bytes" not in history.gaps
    (line,) = [line for line in history_lines(history) if "GPU memory used" in line]
    assert "unknown, because a reading was NaN (121 of 121 points)" in line and len(line) <= 120


@pytest.mark.prometheus
def test_before_the_fleet_existed_the_points_are_gaps(fleet_url):
    history = _read(fleet_url, Queries(), 3600)
    assert history.step_s == 30 and len(history.series["free_bytes"]) == 121
    assert history.series["free_bytes"][0] is None and history.series["free_bytes"][-1] is not None


@pytest.mark.parametrize("text, seconds", [("1h", 3600), ("30m", 1800), ("90s", 90), ("2d", 172800), ("600", 600)])
def test_a_span_is_read_in_words_or_seconds(text, seconds):
    assert parse_span(text) == seconds


@pytest.mark.parametrize("text", ["", "1w", "10s", "8d", "-1h", "1h30m", "nan"])
def test_a_span_that_is_not_one_is_refused_in_words(text):
    with pytest.raises(ValueError, match="--history"):
        parse_span(text)


@pytest.mark.prometheus
def test_snapshot_history_in_json_and_text(fleet_url, capsys):
    from gpumem_tui.cli import main

    argv = ["fleet", "snapshot", "--prometheus", fleet_url, "--at", str(AT), "--history", "2m"]
    assert main([*argv, "--json"]) == 0
    history = json.loads(capsys.readouterr().out)["history"]
    assert (history["start"], history["end"], history["step_s"]) == (AT - 120, AT, 1)
    assert history["series"]["used_bytes"][-1] is None  # node-nan
    assert max(p for p in history["series"]["preemptions_per_min"] if p is not None) > 0
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Last 2 min, a point every 1 s (GPU memory: dcgm-exporter's GPUs):" in out and "Preemptions a minute" in out


def test_demo_snapshot_history_and_a_bad_span(capsys):
    from gpumem_tui.cli import main

    assert main(["fleet", "snapshot", "--demo", "--history", "1h"]) == 0
    out = capsys.readouterr().out
    assert (
        "Last 2 min, a point every 1 s (GPU memory: dcgm-exporter's GPUs):" in out
    )  # the demo's whole run, shorter than the span asked
    assert main(["fleet", "snapshot", "--demo", "--history", "1w"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a span from 1m to 7d" in err


@pytest.mark.prometheus
@pytest.mark.parametrize("label", ["hostname", "Hostname"])
def test_the_newest_point_is_the_node_sums_with_a_chosen_node_label(fleet_url, capsys, label):
    """--node-label: GPUs whose series lack that label name no node, so the history does not count them either
    (node-b and node-f say `hostname`, the others `Hostname`)."""
    from gpumem_tui.cli import main

    argv = ["fleet", "snapshot", "--prometheus", fleet_url, "--at", str(AT), "--history", "2m", "--json"]
    assert main([*argv, "--node-label", label, "--selector", '{Hostname!="node-nan"}']) == 0
    snap = json.loads(capsys.readouterr().out)
    dcgm = [n for n in snap["nodes"] if n["memory_from"] == "dcgm-exporter"]
    assert dcgm and snap["history"]["series"]["used_bytes"][-1] == sum(n["used_bytes"] for n in dcgm)

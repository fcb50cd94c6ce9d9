"""The fleet over VictoriaMetrics gives the answers it gives over Prometheus: the same fleet (conftest's
OpenMetrics text, backfilled into each) read at the same moments by `fleet check`, `fleet snapshot`, `check
--prometheus --node` and the fleet screen. Where the two servers answer differently by design, the difference is
named, normalized and checked by its own test below (docs/fleet.md, "VictoriaMetrics")."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.screens.fleet import Fleet
from gpumem_tui.cli import main
from gpumem_tui.cli.fleet_screen import prometheus_reader
from gpumem_tui.sources.prometheus.client import Connection
from gpumem_tui.sources.prometheus.queries import Queries
from tests.app.screen_text import screen_text
from tests.app.waiting import until
from tests.sources.prometheus.conftest import AT, FLEET, fleet_text

pytestmark = pytest.mark.prometheus

NAN_NODE = "node-nan"
"""VictoriaMetrics returns no NaN sample (its query language drops NaN from answers), so conftest's node whose
exporter wrote NaN has no reading there, where Prometheus has a NaN one: unknown on both, in other words."""
NAN_MODEL = "m"
RATE = re.compile(r"\d+(\.\d+)? preemptions/min")
WINDOW_S = 120.0
"""The preemption rate's window, `rate(...[2m])`."""
MOMENTS = (AT - 70, AT)


def _json(capsys, *argv: str) -> tuple[int, Any]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def _normal(value: Any, url: str) -> Any:
    """An answer with what must differ between the servers made alike: the server's URL (each is its own), a
    preemption rate (PromQL's rate() reads a counter younger than its window over the whole window,
    MetricsQL's over the time the counter has: test_a_young_counter_s_rate_is_read_over_its_own_span), and
    the NaN node's records (NAN_NODE; test_a_nan_reading_is_unknown_on_both)."""
    if isinstance(value, str):
        return RATE.sub("N preemptions/min", value.replace(url, "URL"))
    if isinstance(value, list):
        return [_normal(v, url) for v in value if not _of_nan_node(v)]
    if isinstance(value, dict):
        return {k: "N" if k == "preemptions_per_min" and v else _normal(v, url) for k, v in value.items()}
    return value


def _of_nan_node(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    return NAN_NODE in (value.get("node"), value.get("name")) or value.get("model_name") == NAN_MODEL


@pytest.mark.parametrize("at", MOMENTS)
@pytest.mark.parametrize("argv", [("fleet", "check"), ("fleet", "check", "--full"), ("fleet", "snapshot")])
def test_the_fleet_reads_the_same_on_both(fleet_url, vm_fleet_url, capsys, argv, at):
    answers = []
    for url in (fleet_url, vm_fleet_url):
        code, answer = _json(capsys, *argv, "--prometheus", url, "--at", str(at), "--json")
        answers.append((code, _normal(answer, url)))
    assert answers[0] == answers[1]
    assert answers[0][1]["coverage"]["nodes"] == 9  # the whole fleet, not two empty answers


@pytest.mark.parametrize("node", sorted({spec.name for spec in FLEET}))
def test_each_node_s_check_reads_the_same_on_both(fleet_url, vm_fleet_url, capsys, node):
    answers = []
    for url in (fleet_url, vm_fleet_url):
        code, answer = _json(capsys, "check", "--prometheus", url, "--node", node, "--at", str(AT), "--json")
        answers.append((code, _normal(answer, url)))
    assert answers[0] == answers[1]
    assert f"node {node} in Prometheus URL" in answers[0][1]["where"]


def test_a_young_counter_s_rate_is_read_over_its_own_span(fleet_url, vm_fleet_url, capsys):
    """Each engine's counter starts at 0 when it becomes ready (30 s or 70 s into the fleet): at AT it is younger
    than the 2 min window, and Prometheus's rate is VictoriaMetrics' times the counter's span over the window."""
    first: dict[str, int] = {}
    for line in fleet_text().splitlines():
        if line.startswith("vllm:num_preemptions"):
            first.setdefault(re.search(r'instance="([^"]+)"', line).group(1), int(line.rsplit(" ", 1)[1]))
    rates = []
    for url in (fleet_url, vm_fleet_url):
        _, snap = _json(capsys, "fleet", "snapshot", "--prometheus", url, "--at", str(AT), "--json")
        rates.append({e["instance"]: e["preemptions_per_min"] for e in snap["engines"] if e["preemptions_per_min"]})
    assert rates[0].keys() == rates[1].keys() and len(rates[0]) >= 3
    for instance, vm_rate in rates[1].items():
        span = min(AT - first[instance], WINDOW_S)
        assert rates[0][instance] == pytest.approx(vm_rate * span / WINDOW_S, rel=1e-9), instance


def test_a_nan_reading_is_unknown_on_both(fleet_url, vm_fleet_url, capsys):
    said = []
    for url in (fleet_url, vm_fleet_url):
        _, snap = _json(capsys, "fleet", "snapshot", "--prometheus", url, "--at", str(AT), "--json")
        (node,) = [n for n in snap["nodes"] if n["name"] == NAN_NODE]
        assert node["used_bytes"] is None, url
        said.append(node["unknown"]["used_bytes"])
    assert said == [
        "dcgm-exporter reported FB_USED on a GPU as NaN: no reading",
        "1 of 1 GPUs report no DCGM_FI_DEV_FB_USED",
    ]


async def _screen(url: str) -> tuple[list[str], dict[str, list[list[str]]]]:
    """The header and verdict as shown, and every table's rows (a preemption column's figures normalized, as
    `_normal` does in text; the NaN node's and its model's rows left out)."""
    app = GpuMemApp.of_fleet(Fleet(prometheus_reader(Connection(url), Queries(), AT, 10), url, poll=False))
    async with app.run_test(size=(200, 80)) as pilot:
        fleet = app.screen
        await until(pilot, lambda: fleet.sample is not None or fleet.failure is not None)
        assert fleet.failure is None, fleet.failure
        await pilot.pause()
        tables = {}
        for table in fleet.query("DataTable"):
            rated = [i for i, c in enumerate(table.columns.values()) if str(c.label) == "Pre/min"]
            rows = [
                [("N" if i in rated else _normal(str(c), url)) for i, c in enumerate(table.get_row_at(r))]
                for r in range(table.row_count)
            ]
            tables[table.id] = [row for row in rows if NAN_NODE not in row and NAN_MODEL not in row]
        lines = screen_text(app)
        top = lines[: next(i for i, line in enumerate(lines) if line.strip().startswith("Nodes"))]
        return [" ".join(_normal(line, url).split()) for line in top], tables


async def test_the_fleet_screen_shows_the_same_on_both(fleet_url, vm_fleet_url):
    top, tables = await _screen(fleet_url)
    assert (top, tables) == await _screen(vm_fleet_url)
    assert "9 nodes, 25 GPUs, 12 engines, 12 joined; data age 0 s; source ok" in " ".join(top)
    assert len(tables["fleet-nodes"]) == 8 and len(tables["fleet-models"]) >= 3

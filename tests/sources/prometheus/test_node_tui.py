"""`gpumem-tui --prometheus URL --node NAME`: the single-node TUI on one node of a real Prometheus, and its bad
input (one line, exit 2; 3 when the server does not answer)."""

from __future__ import annotations

import functools
import json

import pytest

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.cli import build_parser, main
from gpumem_tui.cli.tui_cmd import build_app
from tests.app.screen_text import screen_text
from tests.app.waiting import until
from tests.sources.prometheus.conftest import AT, FLEET

NOT_FOUND = "gpumem-tui: no dcgm-exporter or gpumem-tui export series names node"

pytestmark = pytest.mark.prometheus


async def _read(app, pilot) -> None:
    """The node's first read, judged and drawn; a failed read fails the test with its reason (an empty screen
    would otherwise pass as a node with nothing to say)."""
    await until(pilot, lambda: app.node.sample is not None or app.node.last_error is not None)
    assert app.node.last_error is None, app.node.last_error
    assert app.node.sample is not None, "the node's first read never arrived"


def test_the_tui_opens_on_the_node_s_series(fleet_url):
    args = build_parser().parse_args(["--prometheus", fleet_url, "--node", "node-e", "--at", str(AT)])
    app = build_app(args)
    app.node.poll = False
    seen = []

    async def look(pilot):
        await _read(app, pilot)
        seen.append(" ".join(" ".join(screen_text(app)).split()))
        await pilot.press("q")

    app.run(headless=True, size=(150, 50), auto_pilot=look)
    (text,) = seen
    assert f"prometheus {fleet_url} node node-e" in text
    assert "age 90 s" in text  # its exporter stopped 30 s in: the node looks stale
    assert "team-a/vllm-chat-7d9f8c6b5-x2k4q" in text  # its engines, by their pods
    assert app.node.sample is not None and app.node.sample.hostname == "node-e"
    assert app.node.interval_s == 15  # as the fleet screen reads: the series change as often as they are scraped
    args = build_parser().parse_args(
        ["--prometheus", fleet_url, "--node", "node-e", "--at", str(AT), "--interval", "2"]
    )
    assert build_app(args).node.interval_s == 2


@pytest.mark.parametrize(
    ("argv", "code", "said"),
    [
        (["--node", "node-zz"], 2, f"{NOT_FOUND} 'node-zz' in the last hour"),
        ([], 2, "gpumem-tui: --prometheus URL needs --node NAME"),
        (["--node", "node-a", "--at", "soon"], 2, "gpumem-tui: --at 'soon'"),
    ],
)
def test_bad_input_is_one_line(fleet_url, capsys, monkeypatch, argv, code, said):
    """A node no series names: the screen drawn meanwhile ends at its first read, and says why in one line."""
    monkeypatch.setattr(GpuMemApp, "run", functools.partialmethod(GpuMemApp.run, headless=True))
    assert main(["--prometheus", fleet_url, *argv]) == code
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(said) and err.count("\n") == 1, err


def test_node_without_prometheus_is_refused(capsys):
    assert main(["--node", "node-a"]) == 2
    assert (
        capsys.readouterr().err
        == "gpumem-tui: --node and --at are for a node in Prometheus: give --prometheus URL too\n"
    )


def test_a_server_that_does_not_answer_is_no_source(capsys, monkeypatch):
    monkeypatch.setattr(GpuMemApp, "run", functools.partialmethod(GpuMemApp.run, headless=True))
    assert main(["--prometheus", "http://127.0.0.1:9", "--node", "node-a"]) == 3
    assert capsys.readouterr().err.startswith("gpumem-tui: Prometheus cannot be reached: http://127.0.0.1:9")


def _screen_findings(url: str, node: str) -> list:
    app = build_app(build_parser().parse_args(["--prometheus", url, "--node", node, "--at", str(AT)]))
    app.node.poll = False

    async def wait(pilot):
        await _read(app, pilot)
        await pilot.press("q")

    app.run(headless=True, size=(150, 50), auto_pilot=wait)
    return app.node.judged.worded["GiB"]  # in check's unit (`g` switches the screen's)


@pytest.mark.parametrize("node", [spec.name for spec in FLEET])
def test_the_screen_says_what_check_says_of_the_node(fleet_url, capsys, node):
    """One answer per question: the node's screen and `check --prometheus --node` judge one read alike, the
    fleet's own findings about the node (stale, not joined, its exporter's) included."""
    assert main(["check", "--prometheus", fleet_url, "--node", node, "--at", str(AT), "--json"]) in (0, 1, 2)
    checked = json.loads(capsys.readouterr().out)["findings"]
    shown = _screen_findings(fleet_url, node)
    assert sorted((f.code, f.severity, f.title) for f in shown) == sorted(
        (f["code"], f["severity"], f["title"]) for f in checked
    )

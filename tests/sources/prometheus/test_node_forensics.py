"""`f` on a node read from a real Prometheus, and `check --prometheus URL --node N -v`: forensics over the node's
`--history` from range queries, the same on both; bad input and a dead server are one line."""

from __future__ import annotations

import contextlib
import json
import shutil

import pytest

from gpumem_tui.app.screens.forensics import ForensicsScreen
from gpumem_tui.cli import build_parser, fleet_cmd, fleet_screen, main
from gpumem_tui.cli.tui_cmd import build_app
from gpumem_tui.sources.prometheus.node_history import NO_GROWTH
from tests.app.screen_text import screen_text
from tests.app.waiting import until
from tests.sources.prometheus.conftest import AT
from tests.sources.prometheus.server import running

pytestmark = pytest.mark.prometheus
WHAT = "node node-c from Prometheus {url}, the 2 min before 2026-01-01 00:02:00 UTC (step 1 s)"


def _check(capsys, url: str, *more: str) -> tuple[int, str, str]:
    code = main(["check", "--prometheus", url, "--node", "node-c", "--at", str(AT), "--history", "2m", *more])
    out, err = capsys.readouterr()
    return code, out, err


def _check_argv(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _forensics_screen(url: str, before=None) -> str:
    """The node's screen at AT with a 2 min history, `f` pressed: the forensics screen's text once read, its
    lines joined (the screen wraps them)."""
    app = build_app(
        build_parser().parse_args(["--prometheus", url, "--node", "node-c", "--at", str(AT), "--history", "2m"])
    )
    app.node.poll = False
    seen = []

    async def look(pilot):
        await until(pilot, lambda: app.node.sample is not None or app.node.last_error is not None)
        if before is not None:
            before()
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, ForensicsScreen) and not app.screen.workers)
        seen.append(" ".join(" ".join(line.strip("│ ") for line in screen_text(app)).split()))
        await pilot.press("escape")
        await pilot.press("q")

    app.run(headless=True, size=(150, 60), auto_pilot=look)
    return seen[0]


def test_check_verbose_walks_the_node_s_history(fleet_url, capsys):
    code, out, err = _check(capsys, fleet_url, "-v")
    assert code == 2 and err == ""
    assert f"Forensics of {WHAT.format(url=fleet_url)}: 120 s" in out
    assert "First critical finding at 50 s: memory nearly full on GPU 0: 0.58 GiB free (0.7 %)" in out
    assert "60 s       critical  engine does not answer on GPU 0: no process of it is known (node-c:8000)" in out
    code, out, _ = _check(capsys, fleet_url, "-v", "--json")
    forensics = json.loads(out)["forensics"]
    assert forensics["first_critical_offset_s"] == 50 and forensics["first_critical"]["code"] == "headroom_low"
    assert forensics["start_timestamp"] == AT - 120
    assert forensics["notes"] == [f"node node-c: {NO_GROWTH}"]


def test_check_without_verbose_reads_no_history(fleet_url, capsys):
    assert main(["check", "--prometheus", fleet_url, "--node", "node-c", "--at", str(AT), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["forensics"] is None


def test_the_screen_s_forensics_is_check_s(fleet_url, capsys):
    """One answer per question: `f` on the node's screen and `check -v` walk one history alike."""
    code, out, _ = _check(capsys, fleet_url, "-v", "--json")
    forensics = json.loads(out)["forensics"]
    text = _forensics_screen(fleet_url)
    assert f"Forensics of {WHAT.format(url=fleet_url)}: {forensics['end_offset_s']:,.0f} s" in text
    critical = forensics["first_critical"]
    assert f"First critical at {forensics['first_critical_offset_s']:,.0f} s: {critical['title']}" in text
    assert forensics["markers"] and forensics["notes"]
    for marker in forensics["markers"]:
        gpu = "" if marker["gpu_index"] is None else f" {marker['gpu_index']}"
        assert f"{marker['offset_s']:,.0f} s{gpu} {marker['text']}" in text, marker
    for note in forensics["notes"]:
        assert note in text


def test_a_server_gone_before_f_is_one_line_on_the_forensics_screen(fleet_blocks, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(fleet_blocks, data)
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(running(data))
        text = _forensics_screen(url, before=stack.close)
    assert text.count("cannot read") == 1 and f"cannot read {WHAT.format(url=url)}: {url}" in text, text
    assert "Traceback" not in text


@pytest.mark.parametrize(
    ("argv", "code", "said"),
    [
        (["--history", "0"], 2, "gpumem-tui: argument --history: '0': a span from 1m to 7d"),
        (["check", "--history", "0", "-v"], 3, "gpumem-tui: check: argument --history: '0': a span from 1m to 7d"),
        (["--history", "1h"], 2, "gpumem-tui: --history is for a node in Prometheus: give --prometheus URL"),
        (["check", "--history", "1h"], 3, "gpumem-tui: check: --history is how far back -v's forensics reads"),
    ],
)
def test_bad_history_is_one_line(fleet_url, capsys, argv, code, said):
    command, rest = (argv[:1], argv[1:]) if argv[0] == "check" else ([], argv)
    where = ["--prometheus", fleet_url, "--node", "node-c"] if "1h" not in argv else []
    assert main([*command, *where, *rest]) == code
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(said) and err.count("\n") == 1, err


def test_a_range_read_the_server_refuses_is_a_warning_and_the_check_stands(fleet_blocks, tmp_path, capsys):
    """A server that answers the node's instant queries but refuses its range queries (too many samples)."""
    data = tmp_path / "data"
    shutil.copytree(fleet_blocks, data)
    with running(data, flags=("--query.max-samples=60",)) as url:
        code, out, err = _check(capsys, url, "-v", "--json")
    assert code == 2 and json.loads(out)["forensics"] is None
    assert err.count("\n") == 1 and err.startswith(
        f"gpumem-tui: warning: forensics unknown, because the range read failed: {url}/api/v1/query_range: "
        "execution: query processing would load too many samples into memory"
    ), err


def test_a_span_with_no_sample_of_the_node_says_so(fleet_url, capsys):
    """node-e's exporter stopped 30 s in: 400 s later it is still seen (within the hour), but the minute before
    holds no sample of it (past Prometheus's 5 min lookback)."""
    argv = ["check", "--prometheus", fleet_url, "--node", "node-e", "--at", str(AT - 120 + 430), "-v"]
    code, out, err = _check_argv(capsys, *argv, "--history", "1m")
    assert code in (1, 2) and "Forensics of" not in out
    assert err == (
        "gpumem-tui: warning: forensics: no samples: node node-e: no dcgm-exporter sample from 2026-01-01 00:06:10 "
        f"to 00:07:10 UTC: no points there, not zeros; node node-e: {NO_GROWTH}\n"
    )


def test_a_dead_server_under_check_verbose_is_unknown(capsys):
    argv = ["check", "--prometheus", "http://127.0.0.1:9", "--node", "node-c", "--history", "2m", "-v"]
    assert main(argv) == 3
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("gpumem-tui: Prometheus cannot be reached") and err.count("\n") == 1


def test_a_node_opened_from_the_fleet_reads_the_fleet_s_history_span(fleet_url):
    """`enter` on node-c of the fleet screen (`fleet --history 2m`), then `f`: the node's 2 min, not 1 h."""
    args = build_parser().parse_args(["fleet", "--prometheus", fleet_url, "--at", str(AT), "--history", "2m"])
    seen: list[str] = []

    async def drive(pilot):
        app, fleet = pilot.app, pilot.app.screen
        await until(pilot, lambda: fleet.sample is not None and not fleet.sample.reading)  # past the first look
        nodes = fleet.query_one("#fleet-nodes")
        await pilot.press(*["down"] * [k.value for k in nodes.rows].index("node-c"), "enter")
        await until(pilot, lambda: app.node_screen is not None)
        node = app.node_screen.node
        await until(pilot, lambda: node.sample is not None or node.last_error is not None)
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, ForensicsScreen) and not app.screen.workers)
        seen.append(" ".join(" ".join(line.strip("│ ") for line in screen_text(app)).split()))
        await pilot.press("escape", "q")  # the sheet, then the node's screen: back on the fleet
        await pilot.pause()
        assert app.screen is fleet
        await pilot.press("q")

    run_app = lambda app: app.run(headless=True, size=(150, 60), auto_pilot=drive)  # noqa: E731
    assert fleet_screen.run(args, fleet_cmd.inputs, fleet_cmd.demo_alone, run_app=run_app) == 0
    (text,) = seen
    assert f"Forensics of {WHAT.format(url=fleet_url)}: 120 s" in text

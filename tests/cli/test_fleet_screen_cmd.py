"""`gpumem-tui fleet` without an action runs the fleet screen (`--prometheus URL` or `--demo`); `fleet check
--demo` judges the simulated fleet with no Prometheus. Bad input: one line, exit 2."""

from __future__ import annotations

import json

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.cli import main


def test_fleet_check_demo_judges_the_simulated_fleet(capsys):
    code = main(["fleet", "check", "--demo", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 2 and report["status"] == "CRITICAL"
    assert report["source"].startswith("demo")
    codes = {(f["node"], f["code"]) for f in report["findings"]}
    assert ("node-c", "engine_down") in codes and ("node-e", "source_stale") in codes


def test_fleet_without_a_source_is_one_line(capsys):
    assert main(["fleet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["gpumem-tui: fleet: give --prometheus URL or --demo (or an action: snapshot, check)"]


def test_fleet_screen_bad_url_is_one_line(capsys):
    assert main(["fleet", "--prometheus", "ftp://x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ftp://x" in err[0]


def test_fleet_screen_runs_on_the_source_given(monkeypatch):
    ran: list[GpuMemApp] = []
    monkeypatch.setattr(GpuMemApp, "run", lambda self, **_: ran.append(self))
    assert main(["fleet", "--prometheus", "http://prom.example:9090", "--interval", "30"]) == 0
    fleets = [app.fleet for app in ran]
    assert fleets[0].source == "http://prom.example:9090" and fleets[0].interval_s == 30
    assert main(["fleet", "--demo"]) == 0
    assert ran[1].fleet.source.startswith("demo") and ran[1].fleet.open_node is not None


def test_demo_refuses_the_options_of_a_real_source(capsys):
    """--demo is the simulated fleet at its own moment: --at, --selector or a header would be ignored silently."""
    for argv in (["fleet", "snapshot", "--demo", "--at", "5"], ["fleet", "--demo", "--selector", '{a="b"}']):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "for --prometheus; --demo is a simulated fleet" in err[0], err


def test_fleet_screen_reads_the_overview_unless_told_full(monkeypatch, capsys):
    """The screen's reader makes the overview (GPUs one by one only on nodes that need a look) unless --full;
    beside --demo either is refused, as it would be ignored."""
    from gpumem_tui.cli import fleet_screen

    looks: list = []
    real = fleet_screen.prometheus_reader
    monkeypatch.setattr(
        fleet_screen, "prometheus_reader", lambda c, q, at, t, *plan: looks.append(q.look) or real(c, q, at, t, *plan)
    )
    monkeypatch.setattr(GpuMemApp, "run", lambda *_, **__: None)
    assert main(["fleet", "--prometheus", "http://prom.example:9090"]) == 0
    assert main(["fleet", "--prometheus", "http://prom.example:9090", "--full"]) == 0
    assert looks[0] is not None and 0 < looks[0] < 1 and looks[1] is None
    for option in ("--overview", "--full"):
        assert main(["fleet", "--demo", option]) == 2
        assert f"{option} is for --prometheus" in capsys.readouterr().err

"""`check -v` shows the forensics (first critical, who grew) for a simulated node as for a recording:
both are one walk, built into a check the same way."""

from __future__ import annotations

from gpumem_tui.cli import main


def test_check_demo_verbose_shows_the_forensics(capsys):
    assert main(["check", "--demo", "noisy-neighbour", "--at", "300", "-v"]) == 2
    out = capsys.readouterr().out
    assert "First critical finding at " in out
    assert "Who grew in the " in out and "3100  python3" in out.split("Who grew in the ")[-1]
    assert main(["check", "--demo", "noisy-neighbour", "--at", "300"]) == 2
    assert "First critical finding at " not in capsys.readouterr().out  # without -v: the findings only


def test_check_demo_verbose_speaks_one_time_base_and_says_each_window(capsys, monkeypatch):
    """The header's `at 60 s` is the scenario's clock, and so is the timeline; the finding's growth (up to
    when the engine was last seen) and the table's (up to the first critical finding) say which stretch
    each measured, and that it is all that was watched where the window reaches before the walk."""
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["check", "--demo", "noisy-neighbour", "-v"]) == 2
    out = capsys.readouterr().out
    assert "simulated node 'noisy-neighbour' at 60 s" in out
    assert "Timeline (seconds into the scenario)" in out
    assert any(line.startswith("60 s") and "exited" in line for line in out.splitlines())
    assert "First critical finding at 50 s" in out
    assert "Who grew in the 15 s before it was last seen (all that was watched): " in out
    assert "Who grew in the 10 s before it (all that was watched), unexpected first:" in out

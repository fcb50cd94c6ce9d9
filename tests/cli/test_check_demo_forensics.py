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

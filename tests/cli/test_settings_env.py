"""GPUMEM_TUI_* variables: a bad value names its variable, a misspelt one is said once on stderr."""

from __future__ import annotations

from gpumem_tui.cli import main

PLAN = ["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--json"]


def test_a_bad_threshold_names_its_variable(monkeypatch, capsys):
    """It said only `headroom_warning_fraction: Input should be a valid number`, no variable to look for."""
    monkeypatch.setenv("GPUMEM_TUI_HEADROOM_WARNING_FRACTION", "abc")
    assert main(["check", "--demo"]) == 3  # a monitoring plugin's UNKNOWN, as for any bad input
    err = capsys.readouterr().err
    assert err.startswith("gpumem-tui: GPUMEM_TUI_HEADROOM_WARNING_FRACTION='abc': Input should be a valid number")
    monkeypatch.setenv("GPUMEM_TUI_HEADROOM_WARNING_FRACTION", "2")
    assert main(["fleet", "rules", "--selector", "{}"]) == 2
    assert "GPUMEM_TUI_HEADROOM_WARNING_FRACTION='2': Input should be less than 1" in capsys.readouterr().err


def test_a_misspelt_variable_is_said_once_and_changes_no_output(monkeypatch, capsys):
    """A misspelt threshold was ignored without a word; stdout and the exit status stay as they were."""
    assert main(PLAN) == 0
    clean = capsys.readouterr()
    monkeypatch.setenv("GPUMEM_TUI_HEADROOM_WARNIN_FRACTION", "0.2")
    assert main(PLAN) == 0
    said = capsys.readouterr()
    assert said.out == clean.out
    assert said.err == (
        "gpumem-tui: warning: GPUMEM_TUI_HEADROOM_WARNIN_FRACTION is not a gpumem-tui setting and is ignored; "
        "did you mean GPUMEM_TUI_HEADROOM_WARNING_FRACTION?\n"
    )
    monkeypatch.delenv("GPUMEM_TUI_HEADROOM_WARNIN_FRACTION")
    monkeypatch.setenv("GPUMEM_TUI_CATALOG", "")
    monkeypatch.setenv("gpumem_tui_engine_stall_s", "200")  # known, in any case
    assert main(PLAN) == 0
    assert capsys.readouterr().err == ""

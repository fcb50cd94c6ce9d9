"""An option a command does not take is named first, with the nearest it does take, for every command
(issue 26, point 5): `plan --modle x` no longer says that --model or --config is required."""

from __future__ import annotations

import argparse

import pytest

from gpumem_tui.cli import PLUGINS, build_parser, main
from tests.cli.test_options import parsers


def _commands() -> list[tuple[list[str], str]]:
    """Each command (`[]` for the TUI) with a long option of its own that is no prefix of another."""
    found = []
    for name, parser in parsers(build_parser()):
        longs = [o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"]
        unique = [o for o in longs if len(o) > 5 and not any(p != o and p.startswith(o) for p in longs)]
        if unique and not any(isinstance(a, argparse._SubParsersAction) and a.required for a in parser._actions):
            found.append((name.split()[1:], unique[0]))
    return found


def _misspelt(option: str) -> str:
    """The option with its last two letters swapped (`--model` -> `--modle`)."""
    return option[:-2] + option[-1] + option[-2]


def test_plan_names_the_unknown_option_before_any_missing_one(capsys):
    assert main(["plan", "--modle", "x"]) == 2
    assert capsys.readouterr().err == "gpumem-tui: plan: unknown option --modle; did you mean --model?\n"


@pytest.mark.parametrize("command, option", _commands(), ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_every_command_names_a_misspelt_option_and_the_nearest(command, option, capsys):
    typo = _misspelt(option)
    code = main([*command, typo, "x"])
    err = capsys.readouterr().err
    where = f"{' '.join(command)}: " if command else ""
    assert code == (3 if " ".join(command) in PLUGINS else 2)
    assert err.startswith(f"gpumem-tui: {where}unknown option {typo}; did you mean --") and err.count("\n") == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpu-mem=80GB", "--json"],  # an abbreviation
        ["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--overhead", "-1"],  # a negative value
        ["fleet", "check", "--demo", "--json"],  # the subcommand's own options
    ],
)
def test_what_argparse_takes_is_not_an_unknown_option(argv, capsys):
    main(argv)
    assert "unknown option" not in capsys.readouterr().err

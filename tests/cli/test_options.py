"""One vocabulary on the command line: every option says what it is, and `--gpus` is a count everywhere."""

from __future__ import annotations

import argparse

import pytest

from gpumem_tui.cli import build_parser, main


def parsers(parser: argparse.ArgumentParser, name: str = "gpumem-tui"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, child in action.choices.items():
                yield from parsers(child, f"{name} {sub}")


def test_every_option_of_every_command_has_help():
    missing = [
        f"{name} {' '.join(action.option_strings) or action.dest}"
        for name, parser in parsers(build_parser())
        for action in parser._actions
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) and not action.help
    ]
    assert missing == []


def test_gpus_is_a_count_in_every_command_that_has_it():
    for name, parser in parsers(build_parser()):
        for action in parser._actions:
            if "--gpus" in action.option_strings and action.help != argparse.SUPPRESS:
                assert action.metavar == "N" and action.type("2") == 2, name


def test_fit_names_its_cards_with_gpu(capsys):
    import json

    assert main(["fit", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpu", "l4", "--weights", "bf16", "--json"]) == 0
    assert [c["gpu"] for c in json.loads(capsys.readouterr().out)] == ["H100-SXM-80GB", "L4"]


@pytest.mark.parametrize("old", [["--gpus", "h100", "a100"], ["--gpus"]])
def test_fit_with_the_old_gpus_list_says_the_new_option_in_one_line(capsys, old):
    assert main(["fit", *old]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--gpu KEY [KEY ...]" in err and err.startswith("gpumem-tui: fit: --gpus ")

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


def test_no_option_takes_a_bare_float():
    """`metrics --timeout -1` reached the scraper (`WriteTimeout`, exit 3) and `offload --link-gbps nan` was
    computed with: argparse's float takes negatives, nan and inf. Every number option has a checked range."""
    bare = [
        f"{name} {'/'.join(action.option_strings)}"
        for name, parser in parsers(build_parser())
        for action in parser._actions
        if action.type is float
    ]
    assert bare == []


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["metrics", "http://127.0.0.1:9", "--timeout", "-1"], "'-1' must be from 0.1 to 3600 seconds"),
        (["metrics", "http://127.0.0.1:9", "--timeout", "0"], "'0' must be from 0.1 to 3600 seconds"),
        (["fleet", "--prometheus", "http://127.0.0.1:9", "--query-timeout", "nan"], "from 0.1 to 3600 seconds"),
        (["--demo", "--speed", "-1"], "'-1' must be from 0.01 to 10000 times real time"),
        *(
            (["offload", "--model", "llama-3.1-70b", "--gpu", "h100", "--link-gbps", bad], "to 10000 GB/s")
            for bad in ("-1", "nan", "0", "1e-300", "inf")
        ),
    ],
)
def test_number_options_refuse_what_is_out_of_range_in_one_line(capsys, argv, said):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and said in err


def test_offload_refuses_more_resident_weights_than_the_card_holds(capsys):
    """`--resident 1000GB` on an 85.5 GB card was reported as '141.1 GB per GPU from HBM'."""
    assert main(["offload", "--model", "llama-3.1-70b", "--gpu", "h100", "--resident", "1000GB"]) == 2
    assert capsys.readouterr().err == (
        "gpumem-tui: --resident 1,000.0 GB (931.3 GiB): more than the 85.5 GB (79.6 GiB) one H100-SXM-80GB holds\n"
    )


@pytest.mark.parametrize(
    ("argv", "err"),
    [
        (
            ["plan", "--model", "llama-3.1-8b", "--gpu-memory", "-80GB"],
            "plan: argument --gpu-memory: size '-80GB' is negative; sizes are positive, like 80GB or 79.2GiB",
        ),
        (
            ["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--overhead", "-4GB"],
            "plan: argument --overhead: size '-4GB' is negative; sizes are positive, like 80GB or 79.2GiB",
        ),
        (
            ["plan", "--model", "llama-3.1-8b", "--gpu-memory", "80Gb"],
            "plan: argument --gpu-memory: size '80Gb': a lower-case b is bits; write bytes with a B, like 80GB",
        ),
        (
            ["fit", "--gpus", "2"],
            "fit: --gpus is a count of GPUs elsewhere; fit finds each card's count itself: name the cards to "
            "compare with --gpu KEY [KEY ...], e.g. --gpu h100 h200",
        ),
        (
            ["export", "--demo", "--endpoint", "http://127.0.0.1:9"],
            "--endpoint is for live engines; export --demo steps simulated time, where they do not answer (the "
            "TUI's --demo scrapes them beside its own)",
        ),
    ],
)
def test_errors_say_what_the_user_wrote_wrong(capsys, argv, err):
    """'-80GB' was 'unknown option -80GB', 80Gb was read as 80 GB, `fit --gpus 2` suggested `--gpu 2` (a count
    as a card key), and `export --demo --endpoint` spoke of `check --demo`."""
    assert main(argv) == 2
    assert capsys.readouterr().err == f"gpumem-tui: {err}\n"

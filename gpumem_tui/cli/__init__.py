"""Command line: the composition root. Parses arguments, builds sources and plans, prints or runs the app.

Each command registers its options from a light module (`*_opts.py`) whose `run` imports the command's code
(`*_cmd.py`) when it runs, so a one-shot command never loads the TUI (tests/test_import_rules.py holds it).
Options that several commands share: source_opts.py, planargs.py, fleet_opts.py (Prometheus)."""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Iterable, Sequence

from gpumem_tui import __version__
from gpumem_tui.cli import (
    catalog_opts,
    check_opts,
    export_opts,
    fit_opts,
    fleet_opts,
    log_opts,
    metrics_opts,
    plan_opts,
    snapshot_opts,
    train_opts,
)
from gpumem_tui.cli.errors import CRASH, UNKNOWN, UsageError, crashed, exit_code_for, one_line, plugin_failed, report
from gpumem_tui.cli.tui_opts import add_tui_options, run_tui
from gpumem_tui.glyphs import degrade

DESCRIPTION = (
    "Will it fit, and what is in GPU memory right now? With no command, opens the TUI on this node "
    "(NVML plus the engines it finds); --demo opens it on a simulated node, --replay on a recording."
)
COMMANDS = [
    plan_opts,
    fit_opts,
    train_opts,
    catalog_opts,
    snapshot_opts,
    metrics_opts,
    log_opts,
    check_opts,
    export_opts,
    fleet_opts,
]
PLUGINS = {"check", "fleet check"}
"""Monitoring plugins, where any failure (bad input included) is UNKNOWN, 3 (`plugin_failed`). The others
use `exit_code_for`: 2 for bad input, 3 for no data source, and 70 for a crash (one line; the traceback goes
to a file)."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument as one line, without the usage block: a UsageError that names
    the command (exit 2; `check` answers 3). An option the command does not take is named first, with the
    nearest one it does take (`unknown_option`), before argparse would complain of a missing one."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("gpumem-tui").strip() or None
        raise UsageError(f"{command}: {message}" if command else message, command)

    def parse_known_args(self, args=None, namespace=None):  # argparse's own overloads it by the namespace's type
        strings = list(sys.argv[1:] if args is None else args)
        unknown = unknown_option(self, strings)
        if unknown:
            self.error(unknown)
        return super().parse_known_args(strings, namespace)


_NUMBER = re.compile(r"-\d+(\.\d*)?|-\.\d+")


def unknown_option(parser: argparse.ArgumentParser, strings: Sequence[str]) -> str | None:
    """`unknown option --modle; did you mean --model?` for the first option-like word `parser` does not take,
    or None. Stops at `--` and at a command's name: that command's own parser reads what follows. A word
    argparse takes as a value (a negative number, words with a space) is not an option; an abbreviation of a
    long option is left to argparse (which refuses an ambiguous one)."""
    known = parser._option_string_actions
    commands = {
        name for action in parser._actions if isinstance(action, argparse._SubParsersAction) for name in action.choices
    }
    for word in strings:
        if word == "--" or word in commands:
            return None
        if not word.startswith("-") or word == "-" or " " in word or _NUMBER.fullmatch(word):
            continue
        flag = word.split("=", 1)[0]
        short = not flag.startswith("--")
        if flag in known or (short and flag[:2] in known) or (not short and any(o.startswith(flag) for o in known)):
            continue
        return f"unknown option {flag}{_nearest_option(flag, known)}"
    return None


def _nearest_option(flag: str, known: Iterable[str]) -> str:
    """`; did you mean --model?`: the option whose name (without its dashes) is nearest, by difflib."""
    short = not flag.startswith("--")
    names = {option.lstrip("-"): option for option in known if option.startswith("--") != short}
    near = difflib.get_close_matches(flag.lstrip("-"), list(names), n=1, cutoff=0.75)
    return f"; did you mean {names[near[0]]}?" if near else ""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpumem-tui", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"gpumem-tui {__version__}")
    add_tui_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # An ASCII locale prints `...` for `…` rather than dying of UnicodeEncodeError mid-output.
    degrade(sys.stdout)
    degrade(sys.stderr)
    parser = build_parser()
    command = None
    try:
        # Unknown options are found here rather than by argparse's top-level parser, so that the error
        # names the command they were given to (and `check` can answer it with its own exit code).
        args, unknown = parser.parse_known_args(argv)
        command = args.command
        if unknown:
            message = f"unrecognized arguments: {' '.join(unknown)}"
            raise UsageError(f"{command}: {message}" if command else message, command)
        if command is None:
            return run_tui(args)
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader left before the output ended (`| head`); a command whose exit status says something
        # (check, plan --check) computes it before printing and keeps it (output.reader_may_leave).
        # Where the command had not got that far, check says UNKNOWN rather than OK.
        from gpumem_tui.cli.output import stdout_gone  # rich, which --version and --json need not load

        stdout_gone()
        return UNKNOWN if command == "check" else 0
    except SystemExit:  # argparse's --help and --version, and its exit status
        raise
    except BaseException as exc:  # noqa: BLE001 - every failure is one line and a code (asyncio's CancelledError too)
        command = command or getattr(exc, "command", None)
        if command in PLUGINS:
            return plugin_failed(exc, command)
        code = exit_code_for(exc)
        report(one_line(exc) if code is not None else crashed(exc, command))
        return CRASH if code is None else code

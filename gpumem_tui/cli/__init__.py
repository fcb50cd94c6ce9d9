"""Command line: the composition root. Parses arguments, builds sources and plans, prints or runs the app.

Each command registers its options from a light module (`*_opts.py`) whose `run` imports the command's code
(`*_cmd.py`) when it runs, so a one-shot command never loads the TUI (tests/test_import_rules.py holds it).
Options that several commands share: source_opts.py, planargs.py, fleet_opts.py (Prometheus)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

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
    the command (exit 2; `check` answers 3)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("gpumem-tui").strip() or None
        raise UsageError(f"{command}: {message}" if command else message, command)


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

"""Command line: the composition root. Parses arguments, builds sources and plans, prints or runs the app.

Each command registers its options from a light module (`*_opts.py`) whose `run` imports the command's code
(`*_cmd.py`) when it runs, so a one-shot command never loads the TUI (tests/test_import_rules.py holds it).
Options that several commands share: source_opts.py, planargs.py, fleet_opts.py (Prometheus)."""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import re
import sys
from collections.abc import Iterable, Sequence

from gpumem_tui import __version__
from gpumem_tui.cli.errors import (
    CRASH,
    UNKNOWN,
    UsageError,
    crashed,
    exit_code_for,
    one_line,
    plugin_failed,
    report,
    warn,
)
from gpumem_tui.cli.lazy import pause_collector
from gpumem_tui.cli.tui_opts import add_tui_options, run_tui
from gpumem_tui.glyphs import degrade

DESCRIPTION = (
    "Will it fit, and what is in GPU memory right now? With no command, opens the TUI on this node "
    "(NVML plus the engines it finds); --demo opens it on a simulated node, --replay on a recording."
)
COMMANDS = {
    "plan": ("plan_opts:options", "size one deployment: weights, KV cache, overhead, spare, per GPU"),
    "fit": ("fit_opts:options", "table: fewest GPUs (1/2/4/8) for each model, format and GPU"),
    "train": ("train_opts:train_options", "training memory: full (Adam, 16 bytes/param), LoRA or QLoRA"),
    "offload": ("train_opts:offload_options", "tokens/s when weights spill to CPU memory; KV offload break-even"),
    "catalog": ("catalog_opts:options", "list the models, GPUs and weight formats the planner knows"),
    "snapshot": ("snapshot_opts:options", "one sample of GPU memory per GPU and per process, like nvidia-smi"),
    "metrics": ("metrics_opts:options", "parse one engine /metrics payload (a file or a live URL)"),
    "log": ("log_opts:options", "read the memory numbers from a vLLM or SGLang startup log"),
    "check": (
        "check_opts:options",
        "findings: plan vs actual, as a monitoring plugin (exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN)",
    ),
    "export": (
        "export_opts:options",
        "serve this node's GPU memory, plans and findings to Prometheus (/metrics; docs/export.md)",
    ),
    "fleet": ("fleet_opts:options", "the fleet from Prometheus: dcgm-exporter and vLLM series joined"),
}
"""Each command: the function of its light options module (`*_opts.py`) that gives its parser its options,
and the line `--help` lists it with. A command's options are added when it is the one run (`_Commands`), so
`plan` never imports what `check` or `fleet` parse with."""
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
    before = None
    for word in strings:
        if word == "--" or word in commands:
            return None
        if not word.startswith("-") or word == "-" or " " in word or _NUMBER.fullmatch(word):
            before = word
            continue
        if _NEGATIVE.match(word) and before in known and known[before].nargs != 0:
            said = _negative(known[before], before, word)
            if said:
                return said
        before = word
        flag = word.split("=", 1)[0]
        short = not flag.startswith("--")
        if flag in known or (short and flag[:2] in known) or (not short and any(o.startswith(flag) for o in known)):
            continue
        return f"unknown option {flag}{_nearest_option(flag, known)}"
    return None


_NEGATIVE = re.compile(r"-[0-9.]")
"""`-80GB`, `-1e3`: a negative value argparse reads as an option (a plain number, `_NUMBER`, it reads as one)."""


def _negative(action: argparse.Action, option: str, word: str) -> str | None:
    """`argument --gpu-memory: size '-80GB' is negative; sizes are positive ...`: the option's own type says why
    it refuses a value argparse would call an unknown option; None where the type takes it (argparse then
    says the option's value is missing)."""
    try:
        if callable(action.type):
            action.type(word)
    except (argparse.ArgumentTypeError, ValueError) as exc:
        return f"argument {option}: {exc}"
    return None


def _nearest_option(flag: str, known: Iterable[str]) -> str:
    """`; did you mean --model?`: the option whose name (without its dashes) is nearest, by difflib."""
    short = not flag.startswith("--")
    names = {option.lstrip("-"): option for option in known if option.startswith("--") != short}
    near = difflib.get_close_matches(flag.lstrip("-"), list(names), n=1, cutoff=0.75)
    return f"; did you mean {names[near[0]]}?" if near else ""


class _Commands(argparse._SubParsersAction):
    """The commands' subparsers, each given its options (`COMMANDS`) when it is about to parse: the one run,
    or every one at once (`build_parser(every=True)`) for whoever reads them all."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.unfilled: dict[str, str] = {}

    def fill(self, name: str) -> None:
        target = self.unfilled.pop(name, None)
        if target is not None:
            module, _, function = target.partition(":")
            getattr(importlib.import_module(f"gpumem_tui.cli.{module}"), function)(self._name_parser_map[name])

    def __call__(self, parser, namespace, values, option_string=None):  # argparse's signature
        if values:  # the command's name, then its arguments
            self.fill(values[0])
        super().__call__(parser, namespace, values, option_string)


def build_parser(every: bool = True) -> argparse.ArgumentParser:
    """The command line's parser; `every=False` gives a command its options only when it is the one run."""
    parser = _Parser(prog="gpumem-tui", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"gpumem-tui {__version__}")
    add_tui_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser, action=_Commands)
    assert isinstance(sub, _Commands)
    for name, (target, text) in COMMANDS.items():
        sub.add_parser(name, help=text)
        sub.unfilled[name] = target
    if every:
        for name in COMMANDS:
            sub.fill(name)
    return parser


def program() -> int:
    """The command line as a process runs it (`gpumem-tui`, `python -m gpumem_tui`): `main` with the
    collector paused while the command's code is imported (`lazy.py`)."""
    pause_collector()
    return main()


def _unknown_settings() -> None:
    """A warning on stderr, once a run, for each misspelt GPUMEM_TUI_* variable (its value would be ignored);
    the thresholds' record is imported only where one beyond the catalog's is set."""
    if any(name.upper().startswith("GPUMEM_TUI_") and name != "GPUMEM_TUI_CATALOG" for name in os.environ):
        from gpumem_tui.diagnosis.findings.records import unknown_settings

        for line in unknown_settings(os.environ):
            warn(line)


def main(argv: Sequence[str] | None = None) -> int:
    # An ASCII locale prints `...` for `…` rather than dying of UnicodeEncodeError mid-output.
    degrade(sys.stdout)
    degrade(sys.stderr)
    _unknown_settings()
    parser = build_parser(every=False)
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
        from gpumem_tui.cli.output import stdout_gone  # only on a broken pipe

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

"""Which failures are the user's input (exit 2), a missing data source (exit 3) or a crash (exit 70),
printed as one line. (`check` and `fleet check` map every failure to 3, UNKNOWN, as a monitoring plugin
must: `plugin_failed`.) A crash's traceback goes to a file, never to the terminal."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

from gpumem_tui.text import literal


class UsageError(ValueError):
    """Bad arguments: a clear one-line message, exit 2. `command` names the subcommand whose arguments
    were wrong when it is known before its own code runs (argparse's errors)."""

    def __init__(self, message: str, command: str | None = None):
        super().__init__(message)
        self.command = command


def endpoints_need_live(args, command: str | None) -> None:
    """`--endpoint` names real engines, scraped as they answer now. A recording brings its own and `check
    --demo` and `export --demo` (`command`) step simulated time, where no real answer belongs, so both refuse
    it rather than ignore it; the TUI's demo runs on the wall clock and scrapes it beside the simulated engines
    (`command=None`), as `bench/soak.py` does. `snapshot` has no --endpoint."""
    if not getattr(args, "endpoint", None):
        return
    if args.replay is not None:
        raise UsageError("--endpoint is for live engines; a recording brings its own")
    if args.demo is not None and command is not None:
        raise UsageError(
            f"--endpoint is for live engines; {command} --demo steps simulated time, where they do not "
            "answer (the TUI's --demo scrapes them beside its own)"
        )


class NoSourceError(RuntimeError):
    """No data source on this node (NVML unavailable, nothing to read): exit 3."""


CRASH = 70
"""An error inside gpumem-tui, a bug (EX_SOFTWARE in sysexits.h); `check` answers 3, UNKNOWN, instead."""
UNKNOWN = 3
"""A monitoring plugin's answer to bad input, no data source, or a failure inside it: the state is not known."""


def _input_errors() -> tuple[type[BaseException], ...]:
    """The user's input was wrong: a value, a catalog, a file, a scenario, an endpoint, a node name (exit 2).
    Imported when a failure is sorted, not at every start: the layers that raise them are a command's own."""
    from pydantic import ValidationError

    from gpumem_tui.catalog import CatalogError, LookupFailed
    from gpumem_tui.demo.scenario import ScenarioError
    from gpumem_tui.diagnosis.findings.records import ThresholdError
    from gpumem_tui.planner.dtypes import PlanInputError
    from gpumem_tui.sources.engines.endpoints import EndpointError
    from gpumem_tui.sources.prometheus.node_sample import NodeNotFound
    from gpumem_tui.sources.replay import RecordingError
    from gpumem_tui.units import SizeError

    return (
        UsageError,
        ValidationError,
        CatalogError,
        LookupFailed,
        SizeError,
        PlanInputError,
        RecordingError,
        ScenarioError,
        EndpointError,
        NodeNotFound,
        ThresholdError,
    )


def one_line(exc: BaseException) -> str:
    """The error as one line; a pydantic error as its first field and reason."""
    from pydantic import ValidationError  # imported when an error is said, not at every start

    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(map(str, first['loc'])) or 'value'}: {first['msg']}"
    try:
        words = str(exc)
    except Exception:  # noqa: BLE001 - an exception whose message itself fails still gets its line
        words = ""
    return " ".join(words.split("\n")[0].split())


def crashed(exc: BaseException, command: str | None = None) -> str:
    """The one line for a crash: where it was raised, the error, and the file that holds its traceback
    (written to the temp directory; the terminal only ever gets this line)."""
    frames = traceback.extract_tb(exc.__traceback__)
    at = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    saved = _save_traceback(exc)
    kept = f" (traceback in {saved})" if saved else ""
    return f"{command + ': ' if command else ''}internal error{at}: {type(exc).__name__}: {one_line(exc)}{kept}"


def _save_traceback(exc: BaseException) -> str | None:
    import tempfile  # with shutil, lzma and bz2: only a crash pays for them

    try:
        with tempfile.NamedTemporaryFile(
            "w", prefix="gpumem-tui-crash-", suffix=".txt", delete=False, encoding="utf-8", errors="backslashreplace"
        ) as handle:
            handle.writelines(traceback.format_exception(exc))
            return handle.name
    except OSError:
        return None


def exit_code_for(exc: BaseException) -> int | None:
    """2 for bad input, 3 for no data source, None for a bug (let it raise)."""
    if isinstance(exc, _input_errors()):
        return 2
    if isinstance(exc, NoSourceError):
        return 3
    return None


def plugin_failed(exc: BaseException, command: str) -> int:
    """Any failure of a monitoring plugin (`check`, `fleet check`) is UNKNOWN: one line on stderr, exit 3. An
    error that is not the user's input nor a missing source is a bug: the line says where it was raised."""
    report(one_line(exc) if exit_code_for(exc) is not None else crashed(exc, command))
    return UNKNOWN


def report(message: str) -> None:
    """One line on stderr; the message may hold outside text (a file name, a URL), shown literally."""
    print(f"gpumem-tui: {literal(message)}", file=sys.stderr)


def warn(message: str) -> None:
    """A warning that does not stop the command (a line of a recording skipped), as `report` prints it."""
    report(f"warning: {message}")


def exit_status(app) -> int:
    """0 when the app was quit; CRASH (70) when it stopped on an error, with one line naming it on stderr
    and its traceback in a file."""
    if not app.return_code:
        return 0
    error = app._exception  # Textual keeps the exception that stopped the app here
    report(f"the screen stopped on an error: {crashed(error) if error else f'status {app.return_code}'}")
    return CRASH

"""A crash inside a command (a bug, not the user's input): one line naming the error and where its
traceback was written, never the traceback itself; exit 70 (EX_SOFTWARE), and 3 (UNKNOWN) for `check`,
whatever the exception (a cancelled task included, which is not an Exception)."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest

from gpumem_tui.cli import check_cmd, main, snapshot_view


def _one_line(capsys) -> tuple[str, str]:
    out, err = capsys.readouterr()
    assert len(err.splitlines()) == 1 and "Traceback" not in out + err, err
    return out, err.strip()


def _saved(line: str) -> Path:
    path = Path(re.search(r"\(traceback in (.+)\)$", line)[1])
    assert "Traceback (most recent call last)" in path.read_text()
    return path


def test_a_crash_in_a_command_exits_70_with_one_line(monkeypatch, capsys):
    def broken(*_args):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(snapshot_view, "_host_line", broken)  # a bug while the table is drawn
    assert main(["snapshot", "--demo", "idle-node"]) == 70
    _, err = _one_line(capsys)
    assert err.startswith("gpumem-tui: snapshot: internal error at test_crash_exit.py:")
    assert "ZeroDivisionError: division by zero" in err
    _saved(err).unlink()


@pytest.mark.parametrize("error", [KeyError("gpu"), asyncio.CancelledError()], ids=["KeyError", "CancelledError"])
def test_any_crash_in_check_is_unknown(monkeypatch, capsys, error):
    def broken(*_args):
        raise error

    monkeypatch.setattr(check_cmd, "_check", broken)
    assert main(["check", "--demo", "idle-node"]) == 3
    out, err = _one_line(capsys)
    assert out == "" and err.startswith("gpumem-tui: check: internal error at test_crash_exit.py:")
    assert type(error).__name__ in err
    _saved(err).unlink()


def test_crash_files_stay_in_the_test_runs_own_temp_directory(tmp_path_factory):
    """Each crash test removed its traceback file only after its assertions passed, so a failing one (and the
    TUI run in a child process) left gpumem-tui-crash-*.txt in /tmp; the suite's temp directory is pytest's."""
    from gpumem_tui.cli.errors import crashed

    try:
        raise RuntimeError("a bug")
    except RuntimeError as exc:
        line = crashed(exc)
    saved = Path(re.search(r"\(traceback in (.+)\)$", line)[1])
    assert saved.is_relative_to(tmp_path_factory.getbasetemp()), saved
    assert os.environ["TMPDIR"] == str(saved.parent), "child processes write there too"

"""Bad arguments to the TUI are refused before the screen opens: one line on stderr, exit 2, nothing drawn.
Each case runs in this process (tests/cli/refused.py); one runs through a real interpreter too."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cli.refused import refused

BAD = {
    "record into a missing folder": (["--demo", "--record", "/nonexistent/x.jsonl"], "/nonexistent/x.jsonl"),
    "record into a folder": (["--demo", "--record", "."], "cannot record here"),
    "record over a file that is not a recording": (["--demo", "--record", "pyproject.toml"], "not a gpumem-tui"),
    "replay a missing file": (["--replay", "/nonexistent/x.jsonl"], "/nonexistent/x.jsonl"),
    "replay a file that is not a recording": (["--replay", "pyproject.toml"], "not a gpumem-tui recording"),
    "endpoint that is not a URL": (["--endpoint", "ftp://host:8000"], "not an http(s) URL"),
    "endpoint with a bad port": (["--endpoint", "http://host:99999"], "not a valid URL"),
    "interval 0": (["--demo", "--interval", "0"], "--interval"),
    "interval negative": (["--demo", "--interval", "-1"], "--interval"),
    "interval NaN": (["--demo", "--interval", "nan"], "--interval"),
    "unknown theme": (["--demo", "--theme", "neon"], "--theme"),
    "unknown scenario": (["--demo", "nosuch"], "unknown scenario"),
}


@pytest.mark.parametrize("name", BAD)
def test_a_bad_tui_argument_is_one_line_and_exit_2(name, capsys, monkeypatch):
    args, says = BAD[name]
    code, out, err = refused(capsys, monkeypatch, *args)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and says in err, err


@pytest.mark.parametrize("name", ["record into a missing folder", "interval NaN"])
def test_the_console_entry_refuses_as_main_does(name):
    """Through `python -m gpumem_tui` itself: a refusal of the app's own and one of argparse's."""
    args, says = BAD[name]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gpumem_tui", *args],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the screen opened instead of refusing the argument")
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and says in done.stderr, done.stderr


def test_a_refused_record_path_leaves_no_file_behind(tmp_path):
    from gpumem_tui.cli import build_parser
    from gpumem_tui.cli.tui_cmd import check_record_path

    path = tmp_path / "new.jsonl"
    check_record_path(str(path))
    assert not path.exists()  # checked by opening it, then removed: the app makes it with its own header
    assert build_parser().parse_args(["--demo", "--record", str(path)]).record == str(path)

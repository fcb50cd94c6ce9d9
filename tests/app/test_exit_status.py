"""The TUI's exit status: 0 when quit; 70 when the app stopped on an error, with one line naming it on
stderr and its traceback in a file, never Textual's traceback on the terminal."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.cli.errors import CRASH
from gpumem_tui.cli.tui_cmd import exit_status
from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.diagnosis.judge import Judge
from tests.app.conftest import settle

BROKEN_APP = """
import sys
from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.cli.tui_cmd import exit_status
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.demo import ManualClock

app = GpuMemApp(DemoFeed("healthy-8b", ManualClock(300)), Judge(None), poll=False)  # no catalog to judge with
app.run()
sys.exit(exit_status(app))
"""


async def test_quitting_exits_0_and_says_nothing(make_app, capsys):
    app = make_app("idle-node")
    async with app.run_test() as pilot:
        await settle(app, pilot)
        await pilot.press("q")
        await pilot.pause()
    assert exit_status(app) == 0 and capsys.readouterr().err == ""


async def test_an_error_that_stops_the_app_exits_70_with_it_in_one_line(make_app, capsys):
    app = make_app("idle-node")

    def broken() -> None:
        raise LookupError("no GPU 9 on this node\nsecond line")

    with pytest.raises(LookupError):
        async with app.run_test() as pilot:
            await settle(app, pilot)
            app.call_later(broken)
            await pilot.pause()
    assert exit_status(app) == CRASH == 70
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    line = err.splitlines()[0]
    assert line.startswith("gpumem-tui: the screen stopped on an error: internal error at test_exit_status.py:")
    assert "LookupError: no GPU 9 on this node (traceback in " in line
    saved = Path(re.search(r"traceback in (.+)\)$", line)[1])
    assert "Traceback" in saved.read_text() and "second line" in saved.read_text()
    saved.unlink()


async def test_a_crash_in_the_judge_path_exits_70(capsys):
    """The judge fails on the first sample (a judge without a catalog): the app stops, exit 70."""
    app = GpuMemApp(DemoFeed("healthy-8b", ManualClock(300)), Judge(None), poll=False)
    with pytest.raises(AttributeError):
        async with app.run_test() as pilot:
            await settle(app, pilot)
    assert exit_status(app) == 70
    err = capsys.readouterr().err
    assert "AttributeError" in err
    Path(re.search(r"traceback in (.+)\)$", err.strip())[1]).unlink()


def test_on_a_terminal_a_crash_prints_one_line_and_no_traceback():
    """The real thing: the app on a pseudo-terminal, crashing in its judge path."""
    main, child = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(Path(__file__).parents[2])}
    proc = subprocess.Popen([sys.executable, "-c", BROKEN_APP], stdin=child, stdout=child, stderr=child, env=env)
    os.close(child)
    shown, deadline = b"", time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break  # the child closed the terminal
        if not chunk:
            break
        shown += chunk
    code = proc.wait(timeout=10)
    os.close(main)
    text = shown.decode("utf-8", errors="replace")
    assert code == 70, text[-2000:]
    assert "Traceback" not in text and "locals" not in text.lower()
    lines = re.findall(r"gpumem-tui: the screen stopped on an error: [^\r\n]*", text)
    assert len(lines) == 1 and "AttributeError" in lines[0]
    Path(re.search(r"traceback in (.+)\)", lines[0])[1]).unlink()

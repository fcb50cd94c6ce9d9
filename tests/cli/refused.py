"""`gpumem-tui ARGS` (no command: the screen) run in this process, for arguments it must refuse before the
screen opens. An interpreter per case cost more than the check; test_tui_args.py keeps one real one."""

from __future__ import annotations

import pytest

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.cli import main


def refused(capsys, monkeypatch, *args: str) -> tuple[int, str, str]:
    """The exit status, stdout and stderr of `gpumem-tui ARGS` as the console script ends it; a screen that
    would open fails the test (what the subprocess's timeout caught)."""
    opened: list[GpuMemApp] = []
    monkeypatch.setattr(GpuMemApp, "run", lambda app, *_a, **_k: opened.append(app))
    try:
        code = main(list(args))
    except SystemExit as done:  # argparse's own refusals, as `python -m gpumem_tui` would exit
        code = done.code
    out, err = capsys.readouterr()
    if opened:
        pytest.fail("the screen opened instead of refusing the arguments")
    return code, out, err

"""A reader that leaves early (`check ... | head -1`) cuts the output short but never turns a CRITICAL
or a failed plan into exit 0: run through a real pipe whose reading end is closed before anything is written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_into_closed_pipe(*argv: str) -> subprocess.CompletedProcess:
    read, write = os.pipe()
    os.close(read)  # the reader is gone: every write is a broken pipe
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return subprocess.run(
            [sys.executable, "-m", "gpumem_tui", *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "argv, code",
    [
        (["check", "--demo", "noisy-neighbour", "--at", "300"], 2),
        (["check", "--demo", "noisy-neighbour", "--at", "300", "--json"], 2),
        (["check", "--demo", "idle-node", "--at", "60"], 0),
        (["plan", "--model", "llama-3.1-70b", "--gpu", "l4", "--gpus", "1", "--check"], 1),
    ],
)
def test_the_exit_status_survives_a_reader_that_left(argv, code):
    done = run_into_closed_pipe(*argv)
    assert done.returncode == code
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr

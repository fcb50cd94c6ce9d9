"""Every command runs in an ASCII locale (LC_ALL=C, whatever Python's UTF-8 mode): what cannot be encoded prints as its
ASCII twin (`…` as `...`), never a UnicodeEncodeError traceback, and the exit status is the usual one."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gpumem_tui.cli import main
from tests.datafiles import DATA, METRICS

COMMANDS = {
    "plan": ["plan", "--model", "llama-3.1-8b", "--gpu", "h100"],
    "plan vllm": ["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm"],
    "fit": ["fit", "--models", "llama-3.1-70b", "--gpus", "h100"],
    "catalog": ["catalog"],
    "train": ["train", "--model", "llama-3.1-8b", "--gpu", "h100", "--mode", "lora"],
    "offload": ["offload", "--model", "llama-3.1-70b", "--gpu", "h100", "--resident", "60GB"],
    "snapshot": ["snapshot", "--demo", "noisy-neighbour"],
    "check": ["check", "--demo", "noisy-neighbour"],
    "metrics": ["metrics", str(METRICS / "sglang_docs_production_metrics_llama31_8b.prom")],
    "log": ["log", str(DATA / "vllm_0.19_gemma-2-27b_started.log"), "--compare"],
    "bad input": ["plan", "--model", "no-such-model\u2026", "--gpu", "h100"],
}


def run(args: list[str], **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8", "LANG", "LC_ALL")}
    return subprocess.run(
        [sys.executable, "-m", "gpumem_tui", *args], capture_output=True, env={**clean, **env}, timeout=120
    )


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_prints_in_an_ascii_locale(name, capsys):
    code = main(COMMANDS[name])  # the same command where UTF-8 is spoken (this process's captured output)
    utf8 = capsys.readouterr().out
    plain = run(COMMANDS[name], LC_ALL="C")  # Python's UTF-8 mode turns on here (PEP 540): still ASCII
    assert b"Traceback" not in plain.stderr, plain.stderr.decode("ascii", "replace")
    assert plain.returncode == code and plain.returncode in (0, 1, 2)
    plain.stdout.decode("ascii")  # raises if anything but ASCII reached the terminal
    assert len(plain.stdout.splitlines()) == len(utf8.splitlines())


def test_a_predicted_log_line_keeps_its_ellipsis_as_three_dots():
    out = run(COMMANDS["plan vllm"], LC_ALL="C").stdout.decode("ascii")
    assert "Model loading took" in out and "memory and ... seconds" in out


@pytest.mark.parametrize(
    ("environ", "ascii_only"),
    [
        ({"LC_ALL": "C"}, True),
        ({"LC_ALL": "POSIX", "LANG": "en_US.UTF-8"}, True),
        ({"LC_CTYPE": "C", "LANG": "en_US.UTF-8"}, True),
        ({"LANG": "C"}, True),
        ({}, True),  # no locale set is C's, as the C library reads it
        ({"LC_ALL": "en_US.UTF-8", "LANG": "C"}, False),
        ({"LC_ALL": "", "LC_CTYPE": "C.UTF-8", "LANG": "C"}, False),
    ],
)
def test_the_c_locale_is_ascii_whatever_the_stream_says(monkeypatch, environ, ascii_only):
    """Python's UTF-8 mode makes the streams UTF-8 in the C locale, so the stream alone never said ASCII: the
    screen's glyphs and every command's output follow the locale, as the C library resolves it."""
    import io

    from gpumem_tui.glyphs import ASCII, UNICODE, c_locale, degrade, for_terminal

    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert c_locale() is ascii_only
    stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    assert for_terminal(False, stream) is (ASCII if ascii_only else UNICODE)
    degrade(stream)
    stream.write("memory and \u2026 seconds")
    stream.flush()
    assert (
        stream.buffer.getvalue() == ("memory and ... seconds" if ascii_only else "memory and \u2026 seconds").encode()
    )

"""Fuzzing startup logs: real lines from tests/data (vLLM releases, SGLang, PyTorch out-of-memory
messages) mutated (escape bytes, huge, negative and non-finite numbers, long repeats, cuts, invalid
UTF-8, random bytes), through `parse_log`, `gpumem-tui log FILE` and `log FILE --json`.

The invariant: a documented exit, no traceback, no raw escape byte, strict JSON, and a record whose
numbers are finite and within what an engine could log."""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from functools import cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpumem_tui.sources.engines.logparse import LIMIT, parse_log
from gpumem_tui.sources.engines.startup_log import StartupLog
from tests.fuzz.conftest import assert_clean, run_cli

DATA = Path(__file__).resolve().parents[1] / "data"
WITH_FIXTURES = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
HOSTILE = ["\x1b[2J", "\x1b]0;title\x07", "\x9b31m", "\x00", "\r", "\u202e", "[red]x[/red]", "**", "\t"]
NUMBERS = ["-1", "-0.5", "0", "nan", "inf", "1e400", "9" * 30, "9" * 400, "1,2,3,4", "0.0000001", "1e-400"]


@cache
def real_lines() -> tuple[str, ...]:
    """Every line of the stored startup logs and out-of-memory messages."""
    lines: list[str] = []
    for path in sorted([*DATA.glob("*.log"), *(DATA / "torch_oom").glob("*.log")]):
        lines += path.read_text(encoding="utf-8").splitlines()
    for entry in json.loads((DATA / "calibration" / "vllm_startup_logs.json").read_text()):
        lines += entry.get("log_lines") or []
    return tuple(line for line in lines if line.strip())


@st.composite
def mutated_line(draw) -> str:
    line = draw(st.sampled_from(real_lines()))
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["hostile", "number", "number", "number", "repeat", "cut", "noise"]))
        at = draw(st.integers(0, len(line)))
        if kind == "hostile":
            line = line[:at] + draw(st.sampled_from(HOSTILE)) + line[at:]
        elif kind == "number":  # one number of the line, or all of them, becomes an odd one
            numbers = list(re.finditer(r"\d+(?:\.\d+)?", line))
            odd = draw(st.sampled_from(NUMBERS))
            if numbers and draw(st.booleans()):
                hit = draw(st.sampled_from(numbers))
                line = line[: hit.start()] + odd + line[hit.end() :]
            else:
                line = re.sub(r"\d+(?:\.\d+)?", odd, line)
        elif kind == "repeat":
            line = line[:at] + line[at:] * draw(st.integers(2, 200))
        elif kind == "cut":
            line = line[:at]
        else:
            line = line[:at] + draw(st.text(max_size=30)) + line[at:]
    return line


@st.composite
def logs(draw) -> bytes:
    """A log of mutated real lines, now and then with random bytes (invalid UTF-8 included)."""
    text = "\n".join(draw(st.lists(mutated_line(), min_size=1, max_size=25))) + "\n"
    data = text.encode("utf-8", errors="surrogatepass")
    if draw(st.booleans()):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=64)) + data[at:]
    return data


def assert_plausible(log: StartupLog | dict) -> None:
    """Every number finite and within what an engine could log, in the record and per rank."""
    data = log.model_dump() if isinstance(log, StartupLog) else log
    for key, value in data.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            assert math.isfinite(value) and abs(value) <= LIMIT, (key, value)
    for rank in data.get("ranks", []):
        assert_plausible(rank)


@given(logs())
def test_parse_log_gives_finite_plausible_numbers(data: bytes) -> None:
    assert_plausible(parse_log(data.decode("utf-8", errors="replace")))


@WITH_FIXTURES
@given(logs())
def test_log_command_stays_clean(capsys, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "engine.log")
        Path(path).write_bytes(data)
        for json_out in (False, True):
            code, out, err = run_cli(capsys, ["log", path, *(["--json"] if json_out else [])])
            assert_clean(code, out, err, exits={0, 1, 2}, json_out=json_out)  # 1: the log shows a failed start
            if json_out and code in (0, 1):
                assert_plausible(json.loads(out))

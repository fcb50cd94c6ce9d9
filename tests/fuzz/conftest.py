"""The fuzz suite's shared invariant: whatever a file or a server hands the app, a command ends with a
documented exit code, prints no traceback and no raw escape byte, and its JSON is strict.

Hypothesis runs bounded (few examples, no per-example deadline: the machines are shared), so the test
command stays fast; `HYPOTHESIS_PROFILE=deep` runs more examples by hand."""

from __future__ import annotations

import json
import math
import os

from hypothesis import HealthCheck, settings

from gpumem_tui.cli import main

settings.register_profile(
    "suite", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("deep", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

DOCUMENTED_EXITS = {0, 1, 2, 3}
"""0 ok, 1 warning, 2 critical or bad input (3 for `check`, the monitoring-plugin convention)."""


def run_cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    """Run the real entry point in-process; the exit code and both streams."""
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_clean(code: int, out: str, err: str, *, exits=DOCUMENTED_EXITS, json_out: bool = False) -> None:
    """The invariant every hostile input must keep."""
    assert code in exits, f"exit {code}: {err[-400:]}"
    assert "Traceback" not in out + err, err[-2000:]
    assert "\x1b" not in out + err and "\x9b" not in out + err, "a raw escape byte reached the output"
    if json_out and code in (0, 1, 2) and out.strip():
        json.loads(out, parse_constant=_refuse_constant)


def _refuse_constant(name: str) -> float:
    raise AssertionError(f"{name} in JSON output: not strict JSON")


def finite(value: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def assert_judged(records) -> None:
    """Every number an engine record holds is a reading (finite, not negative, within 64 bits: the record
    dropped and noted the rest), and what `engine_values` leaves to plan and measure with is at most 10^15."""
    from gpumem_tui.diagnosis.engine_values import MAX_COUNT, plausible

    for record in records:
        for field, value in record.model_dump().items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                assert math.isfinite(value) and 0 <= value < 2**64, (field, value)
        for field, value in plausible(record).model_dump().items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                assert value <= MAX_COUNT, (field, value)

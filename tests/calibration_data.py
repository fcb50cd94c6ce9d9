"""Paths to the shared calibration material that sits beside the checkout (read-only)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CALIBRATION = SHARED / "calibration"
METRICS = CALIBRATION / "metrics"


@cache
def startup_cases() -> list[dict]:
    return json.loads((CALIBRATION / "vllm_startup_logs.json").read_text(encoding="utf-8"))


def metrics_text(name: str) -> str:
    return (METRICS / name).read_text(encoding="utf-8")

"""bench/accuracy_sglang.py: every SGLang calibration launch is measured or skipped with why, each error is
the command's own comparison against the case's logged pool, and the summary is the median and worst of them."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from tests.datafiles import SGLANG_CALIBRATION

ROOT = Path(__file__).resolve().parents[1]


def test_the_sglang_bench_measures_every_launch_and_summarises_them():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "bench/accuracy_sglang.py", "--json"], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    cases = json.loads(SGLANG_CALIBRATION.read_text())
    assert [r["case"] for r in report["cases"]] == [c["id"] for c in cases]
    assert all(r["skipped"].strip() for r in report["cases"] if "skipped" in r)
    errors = [r["tokens"] for r in report["cases"] if r.get("tokens") is not None]
    assert report["tokens"]["median"] == statistics.median(abs(e) for e in errors)
    assert report["tokens"]["worst"] == max(errors, key=abs)
    assert report["tokens"]["median"] <= 0.02 and not report["outside_10_percent"]
    assert report["oom_predicted_to_fail"] == ["inferencex-2128-dsv4-pro-fp8-8xH200-mfs088-oom"]

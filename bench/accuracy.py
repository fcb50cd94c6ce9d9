"""Accuracy of the vLLM startup model on every calibration case the catalog can express.

Run: python3 bench/accuracy.py [path/to/vllm_startup_logs.json]
Prints per case and in total the error of weights, KV cache GiB and KV tokens against what the log says.
Goals: weights within 1 %; KV median error <= 1 %, every case within max(3 %, 0.3 GiB).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from gpumem_tui.catalog import LookupFailed, load_catalog
from gpumem_tui.planner.vllm import predict
from gpumem_tui.planner.vllm.from_log import Stated, release_of, settings_from
from gpumem_tui.units import GIB

DEFAULT = Path(__file__).resolve().parents[1] / "tests" / "data" / "calibration" / "vllm_startup_logs.json"
"""The calibration set copied into the repository (tests/data/README.md says from where)."""


def main(path: Path) -> int:
    catalog, cases = load_catalog(), json.loads(path.read_text())
    rows, kv_errors, weight_errors, misses = [], [], [], []
    for index, case in enumerate(cases):
        release = release_of(case.get("vllm_version"), case["log_lines"])
        version = release["version"]
        if case.get("kv_cache_gib") is None or release["source"] == "default":
            continue
        if " " in (case.get("model") or ""):
            print(f"#{index:<2} skipped: the source names no exact model ({case['model']})")
            continue
        try:
            p = predict(settings_from(catalog, Stated.from_case(case), version))
        except LookupFailed as exc:
            print(f"#{index:<2} skipped: {exc}")
            continue
        kv_pred, kv_real = p.kv_cache_bytes / GIB, case["kv_cache_gib"]
        kv_err = (kv_pred - kv_real) / kv_real if kv_real > 0 else float("nan")
        within = abs(kv_pred - kv_real) <= max(0.03 * abs(kv_real), 0.3)
        kv_errors.append(abs(kv_err))
        if not within:
            misses.append(index)
        w = ""
        if case.get("weights_gib"):
            w_err = (p.weights_bytes / GIB - case["weights_gib"]) / case["weights_gib"]
            weight_errors.append(abs(w_err))
            w = f"weights {p.weights_bytes / GIB:7.2f} vs {case['weights_gib']:7.2f} ({w_err:+6.2%})"
        tok = ""
        if case.get("kv_cache_tokens"):
            t_err = (p.kv_cache_tokens - case["kv_cache_tokens"]) / case["kv_cache_tokens"]
            tok = f"tokens {p.kv_cache_tokens:>10,} vs {case['kv_cache_tokens']:>10,} ({t_err:+6.2%})"
        rows.append(
            f"#{index:<2} {version:<7} {case['model'][:44]:<44} {w}  KV {kv_pred:6.2f} vs {kv_real:6.2f} GiB "
            f"({kv_err:+6.2%}){'' if within else ' MISS'}  {tok}"
        )
    print("\n".join(rows))
    print(
        f"\ncases: {len(kv_errors)}; weights: max error {max(weight_errors):.2%}, median {statistics.median(weight_errors):.2%}"  # noqa: E501
        f"; KV cache: median error {statistics.median(kv_errors):.2%}, max {max(kv_errors):.2%}; "
        f"outside max(3 %, 0.3 GiB): {len(misses)} {misses}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT))

"""Accuracy of the vLLM startup model on every calibration case the catalog can express.

Run: python3 bench/accuracy.py [--json] [FILE ...]
FILE defaults to both calibration sets: vllm_startup_logs.json (split "seen": what the model was built on)
and vllm_0.19_llmd_sweep.json (splits "dev" and "heldout", tests/data/README.md). Prints per case the
then SGLang's launches (bench/accuracy_sglang.py, run after these when no FILE is given).
error of weights, activation peak, non-torch, CUDA graphs, KV GiB, blocks, tokens and concurrency; then
the median and worst error of each field by model class and by split; then the issue-15 goal lines
(KV median < 0.5 %, every case within max(3 %, 0.3 GiB), blocks within 1 % of what the log's KV bytes
imply at the predicted bytes per block); last, the seen set's summary in its earlier wording.
An error is (predicted - log) / log; a median is of the sizes of the errors, a worst keeps its sign.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

from gpumem_tui.catalog import Catalog, LookupFailed, ModelSpec, load_catalog
from gpumem_tui.planner.vllm import predict
from gpumem_tui.planner.vllm.against_log import versus
from gpumem_tui.planner.vllm.from_log import Stated, release_of, settings_from
from gpumem_tui.planner.vllm.predict import resolve
from gpumem_tui.planner.vllm.records import EngineSettings
from gpumem_tui.units import GIB

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "calibration"
DEFAULT = DATA / "vllm_startup_logs.json"
"""The calibration set copied into the repository (tests/data/README.md says from where)."""
SWEEP = DATA / "vllm_0.19_llmd_sweep.json"
"""The llm-d sweep's startups the first set lacks, each with `classes` and `split`."""

FIELDS = {
    "weights": ("weights_gib",),
    "activation": ("activation_peak_gib",),
    "non-torch": ("non_torch_gib",),
    "graphs": ("cudagraph_estimated_gib", "cudagraph_gib"),
    "KV GiB": ("kv_cache_gib",),
    "blocks": ("num_gpu_blocks",),
    "tokens": ("kv_cache_tokens",),
    "concurrency": ("max_concurrency",),
}
"""Each field and the log's figure it is held against (graphs: the estimate where the log states one,
else the captured size)."""
CLASSES = ("dense", "moe", "mxfp4", "multimodal", "mla", "chunked")
SPLITS = ("seen", "dev", "heldout")
KV_GOAL = 0.005
BLOCK_GOAL = 0.01


def classes_of(case: dict, spec: ModelSpec) -> list[str]:
    """The case's own `classes`; for the seen set (which has none) what the catalog entry shows."""
    if case.get("classes"):
        return list(case["classes"])
    found = [
        name
        for name, shown in (
            ("moe", spec.moe is not None),
            ("mxfp4", spec.checkpoint_format == "mxfp4" or case.get("quantization") == "mxfp4"),
            ("multimodal", "ConditionalGeneration" in spec.architecture),
            ("mla", spec.mla is not None),
            ("chunked", spec.architecture.startswith("Llama4")),
        )
        if shown
    ]
    return found or ["dense"]


def block_check(settings: EngineSettings, case: dict) -> dict:
    """The blocks the log's KV bytes make at the predicted bytes per block, against the log's blocks: checks
    the page and group model apart from the budget. Not made under pipeline parallelism: the pool is sized
    by the smallest stage, and these logs state only the first stage's KV bytes."""
    blocks = case.get("num_gpu_blocks")
    if settings.pp > 1 or not blocks:
        why = "pipeline stages: the log states one stage's KV bytes" if settings.pp > 1 else "no block count"
        return {"bytes_per_block": None, "implied": None, "log": blocks, "error": None, "unchecked": why}
    lay = resolve(settings).layout(0)
    per_block = lay.page_bytes * lay.group_layers
    implied = int(case["kv_cache_gib"] * GIB) // per_block
    return {"bytes_per_block": per_block, "implied": implied, "log": blocks, "error": (implied - blocks) / blocks}


def measure(catalog: Catalog, case: dict, name: str, split: str) -> dict:
    """One case: predicted, logged and error per field; or `skipped` with why."""
    base = {"case": name, "split": split, "model": case.get("model"), "version": case.get("vllm_version")}
    base["classes"] = list(case.get("classes") or [])
    release = release_of(case.get("vllm_version"), case["log_lines"])
    if case.get("kv_cache_gib") is None:
        return {**base, "skipped": "the start failed or the log states no KV cache"}
    if release["source"] == "default":
        return {**base, "skipped": "the source names no vLLM release"}
    if " " in (case.get("model") or ""):
        return {**base, "skipped": f"the source names no exact model ({case['model']})"}
    try:
        settings = settings_from(catalog, Stated.from_case(case), release["version"])
    except LookupFailed as exc:
        return {**base, "skipped": str(exc)}
    p = predict(settings)
    rows = {row.key: row for row in versus(p, case)}
    fields = {}
    for field, keys in FIELDS.items():
        row = next((rows[key] for key in keys if rows[key].error is not None), None)
        if row is not None:
            fields[field] = {"predicted": row.predicted, "log": row.stated, "error": row.error}
    return {
        **base,
        "version": release["version"],
        "classes": classes_of(case, settings.model),
        "fields": fields,
        "within": abs(p.kv_cache_bytes / GIB - case["kv_cache_gib"]) <= max(0.03 * case["kv_cache_gib"], 0.3),
        "block_check": block_check(settings, case),
    }


def summary(results: list[dict]) -> dict:
    """Per field: how many cases state it, the median size of their errors and the worst (signed)."""
    out = {}
    for field in FIELDS:
        errors = [r["fields"][field]["error"] for r in results if field in r["fields"]]
        if errors:
            out[field] = {
                "cases": len(errors),
                "median": statistics.median(abs(e) for e in errors),
                "worst": max(errors, key=abs),
            }
    return out


def tables(results: list[dict]) -> dict:
    """The summary of each class and each split that the data holds, and how many of its cases were
    measured and skipped."""
    done = [r for r in results if "skipped" not in r]
    present = {c for r in results for c in r["classes"]}
    classes = [c for c in CLASSES if c in present]
    splits = [s for s in SPLITS if any(r["split"] == s for r in results)]

    def counts(members: list[dict]) -> list[int]:
        return [sum("skipped" not in r for r in members), sum("skipped" in r for r in members)]

    return {
        "by_class": {c: summary([r for r in done if c in r["classes"]]) for c in classes},
        "by_split": {s: summary([r for r in done if r["split"] == s]) for s in splits},
        "all": summary(done),
        "counts": {
            **{c: counts([r for r in results if c in r["classes"]]) for c in classes},
            **{s: counts([r for r in results if r["split"] == s]) for s in splits},
            "all": counts(results),
        },
    }


def goal(results: list[dict]) -> dict:
    """The issue's goal on these cases: KV median, cases outside max(3 %, 0.3 GiB), blocks vs KV bytes."""
    done = [r for r in results if "skipped" not in r]
    kv = [abs(r["fields"]["KV GiB"]["error"]) for r in done]
    checked = [r for r in done if r["block_check"]["error"] is not None]
    return {
        "cases": len(done),
        "skipped": [r["case"] for r in results if "skipped" in r],
        "kv_median": statistics.median(kv) if kv else None,
        "outside": [r["case"] for r in done if not r["within"]],
        "blocks_checked": len(checked),
        "blocks_off": [r["case"] for r in checked if abs(r["block_check"]["error"]) > BLOCK_GOAL],
        "blocks_unchecked": len(done) - len(checked),
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2%}"


def _case_line(r: dict) -> str:
    if "skipped" in r:
        return f"{r['case']:<4} skipped: {r['skipped']}"
    f, b = r["fields"], r["block_check"]
    kv = f["KV GiB"]
    errors = "  ".join(
        f"{name} {_pct(f[name]['error']) if name in f else '-':>8}" for name in FIELDS if name != "KV GiB"
    )
    return (
        f"{r['case']:<4} {r['split']:<7} {r['version']:<7} {r['model'][:44]:<44} {'+'.join(r['classes']):<16} "
        f"KV {kv['predicted']:6.2f} vs {kv['log']:6.2f} GiB ({kv['error']:+6.2%}){'' if r['within'] else ' MISS'}  "
        f"{errors}  blocks/KV {_pct(b['error'])}"
    )


def _table(title: str, rows: dict[str, dict], counts: dict[str, list[int]]) -> list[str]:
    """One row per class or split: measured and skipped cases, then n, median and worst of each field."""
    head = f"{title:<11}{'cases':>8}" + "".join(f"{name:>22}" for name in FIELDS)
    lines = [head, f"{'':<11}{'(skip)':>8}" + "".join(f"{'n  median   worst':>22}" for _ in FIELDS)]
    for key, fields in rows.items():
        cells = [
            f"{fields[n]['cases']:>3} {fields[n]['median']:6.2%} {fields[n]['worst']:+8.2%}" if n in fields else "-"
            for n in FIELDS
        ]
        measured, skipped = counts[key]
        lines.append(f"{key:<11}{f'{measured} ({skipped})':>8}" + "".join(f"{cell:>22}" for cell in cells))
    return lines


def _skipped(names: list[str]) -> str:
    """The cases a goal line could not measure, named: a skipped case must not read as met."""
    return f"; {len(names)} skipped: {', '.join(names)}" if names else ""


def _goal_lines(label: str, g: dict, results: list[dict]) -> list[str]:
    named = {r["case"]: r for r in results}

    def kv(name: str) -> str:
        return f"{name} {named[name]['model']} ({named[name]['fields']['KV GiB']['error']:+.1%})"

    def blocks(name: str) -> str:
        b = named[name]["block_check"]
        return f"{name} {named[name]['model']} (implied {b['implied']:,} vs log {b['log']:,}, {b['error']:+.1%})"

    median = "-" if g["kv_median"] is None else f"{g['kv_median']:.2%}"
    met = g["kv_median"] is not None and g["kv_median"] < KV_GOAL
    return [
        f"goal, {label} ({g['cases']} cases{_skipped(g['skipped'])}): KV median {median} "
        f"(goal < 0.5 %: {'met' if met else 'not met'})",
        f"  outside max(3 %, 0.3 GiB): {len(g['outside'])}" + "".join(f"\n    {kv(n)}" for n in g["outside"]),
        f"  block counts within 1 % of what the KV bytes imply: {g['blocks_checked'] - len(g['blocks_off'])} "
        f"of {g['blocks_checked']} ({g['blocks_unchecked']} not checkable: pipeline stages or no block count)"
        + "".join(f"\n    {blocks(n)}" for n in g["blocks_off"]),
    ]


def _seen_summary(results: list[dict]) -> str:
    """The seen set's totals in the wording earlier notes quote (docs/vllm-sizing.md)."""
    seen = [r for r in results if r["split"] == "seen" and "skipped" not in r]
    kv = [abs(r["fields"]["KV GiB"]["error"]) for r in seen]
    weights = [abs(r["fields"]["weights"]["error"]) for r in seen if "weights" in r["fields"]]
    misses = [int(r["case"].lstrip("#")) for r in seen if not r["within"]]
    return (
        f"cases: {len(kv)}; weights: max error {max(weights):.2%}, median {statistics.median(weights):.2%}"
        f"; KV cache: median error {statistics.median(kv):.2%}, max {max(kv):.2%}; "
        f"outside max(3 %, 0.3 GiB): {len(misses)} {misses}"
    )


def run(paths: list[Path]) -> tuple[list[dict], dict]:
    catalog, results = load_catalog(), []
    for path in paths:
        for index, case in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            split = case.get("split", "seen")
            name = f"#{index}" if split == "seen" else f"L{index}"
            results.append(measure(catalog, case, name, split))
    report = tables(results)
    report["goal"] = {"heldout": goal([r for r in results if r["split"] == "heldout"]), "all": goal(results)}
    return results, report


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    given = [Path(a) for a in argv if a != "--json"]
    results, report = run(given or [DEFAULT, SWEEP])
    if as_json:
        print(json.dumps({"cases": results, **report}, indent=1))
        return 0
    _vllm_lines(results, report)
    if not given:  # the default sets: SGLang's launches too, through their own bench
        print("\nSGLang (bench/accuracy_sglang.py):")
        subprocess.run([sys.executable, str(Path(__file__).with_name("accuracy_sglang.py"))], check=True)
    return 0


def _vllm_lines(results: list[dict], report: dict) -> None:
    print("\n".join(_case_line(r) for r in results))
    print()
    print("\n".join(_table("class", report["by_class"], report["counts"])))
    print()
    print("\n".join(_table("split", {**report["by_split"], "all": report["all"]}, report["counts"])))
    print()
    if any(r["split"] == "heldout" for r in results):
        print("\n".join(_goal_lines("held-out startups", report["goal"]["heldout"], results)))
    print("\n".join(_goal_lines("every case", report["goal"]["all"], results)))
    if any(r["split"] == "seen" and "skipped" not in r for r in results):
        print(f"\n{_seen_summary(results)}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

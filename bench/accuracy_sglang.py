"""Accuracy of SGLang's startup model on the SGLang calibration launches, through `log FILE --compare --json`.

Run: python3 bench/accuracy_sglang.py [--json]
Each launch with a pool line is written out as a log (its own lines, verbatim; the ServerArgs line the
collector abbreviated first where the case keeps one) and compared; what its lines do not state is given as
the source's command states it (OPTIONS). Prints per case the error of the KV pool in tokens (with the
log's measured free memory where it states it, and from the settings alone), the release and where the
start ended; then the median and worst of each, and the issue's goal (median <= 2 %, every start within
10 %, every launch that ran out of memory predicted to fail). Cases the command cannot predict are named
with why. An error is (predicted - log) / log; a median is of the sizes, a worst keeps its sign.
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import sys
import tempfile
from pathlib import Path

from gpumem_tui.cli import main as cli

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "calibration" / "sglang_startup_logs.json"
SHAPES = {
    "qwq": {  # QwQ-32B (its model card and its preview's Qwen2Config; tests/cli/test_log_compare_sglang.py)
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120,
        "intermediate_size": 27648, "num_hidden_layers": 64, "num_attention_heads": 40, "num_key_value_heads": 8,
        "vocab_size": 152064, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
        "tie_word_embeddings": False, "_name_or_path": "Qwen/QwQ-32B",
    },
    "grok": {  # the reference's section 5 shape: 64 layers, 8 KV heads of 128
        "architectures": ["Grok1ForCausalLM"], "model_type": "grok-1", "hidden_size": 8192,
        "intermediate_size": 32768, "num_hidden_layers": 64, "num_attention_heads": 64, "num_key_value_heads": 8,
        "head_dim": 128, "vocab_size": 131072, "max_position_embeddings": 131072, "num_local_experts": 8,
        "num_experts_per_tok": 2, "torch_dtype": "bfloat16", "_name_or_path": "xai-org/grok-2",
    },
    "mllama": {  # 40 layers x 8 KV heads x 128 (section 5) and a vision tower
        "architectures": ["MllamaForConditionalGeneration"], "model_type": "mllama", "torch_dtype": "bfloat16",
        "_name_or_path": "meta-llama/Llama-3.2-11B-Vision-Instruct",
        "text_config": {
            "model_type": "mllama_text_model", "hidden_size": 4096, "intermediate_size": 14336,
            "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
            "max_position_embeddings": 131072, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
            "cross_attention_layers": [3, 8, 13, 18, 23, 28, 33, 38],
        },
        "vision_config": {
            "model_type": "mllama_vision_model", "hidden_size": 1280, "intermediate_size": 5120,
            "num_hidden_layers": 32, "num_global_layers": 8, "attention_heads": 16, "image_size": 560,
            "patch_size": 14, "num_channels": 3, "vision_output_dim": 7680,
        },
    },
}  # fmt: skip
OPTIONS: dict[str, list[str]] = {
    "blog-grok2-fp8-8xH100-v0.5.2rc2": ["config:grok"],
    "llms-in-clouds-qwq32b-4xL4-2025-03-08": ["config:qwq"],
    "sglang-repo-nb-llama32-11b-vision-48gb-2024-10-31": ["config:mllama"],
    "mi300-testing-llama3-8b-mi300x-bench-latency-2024-10-10": ["--model", "meta-llama/Meta-Llama-3-8B-Instruct"],
    "sglang-2468-mistral-7b-v0.1-24gb": ["--model", "mistralai/Mistral-7B-Instruct-v0.1"],
    "sglang-repo-nb-gte-qwen2-7b-embed-48gb-2024-10-29": ["--model", "Qwen/Qwen2.5-7B-Instruct"],
    "vllm-21348-qwen3-235b-fp8-4xH100": [
        "--model", "Qwen/Qwen3-235B-A22B-FP8", "--tp", "4", "--mem-fraction-static", "0.93",
    ],
    "sglang-docs-k8s-dsr1-tp16-2x8xH20": ["--model", "deepseek-v3", "--tp", "16", "--mem-fraction-static", "0.93"],
    "inferencex-2128-dsv4-pro-fp8-8xH200-mfs088-oom": ["--model", "deepseek-v3", "--tp", "8"],
}  # fmt: skip
"""What each launch's lines do not state, as its source's command (and the stand-ins the test names)."""
GOAL_MEDIAN, GOAL_EACH = 0.02, 0.10


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli(args)
    return code, out.getvalue(), err.getvalue()


def measure(case: dict, where: Path) -> dict:
    base = {"case": case["id"], "outcome": case["outcome"]}
    if not case["log_lines"]:
        return {**base, "skipped": "the source shows no log line"}
    lines = ([case["server_args_line_abbreviated"]] if case.get("server_args_line_abbreviated") else []) + case[
        "log_lines"
    ]
    path = where / f"{case['id']}.log"
    path.write_text("\n".join(lines) + "\n")
    args = ["log", str(path), "--compare", "--json"]
    for option in OPTIONS.get(case["id"], []):
        if option.startswith("config:"):
            folder = where / option[7:]
            folder.mkdir(exist_ok=True)
            (folder / "config.json").write_text(json.dumps(SHAPES[option[7:]]))
            args += ["--config", str(folder)]
        else:
            args.append(option)
    code, out, err = _run(args)
    if code == 2:
        return {**base, "skipped": err.strip().removeprefix("gpumem-tui: ")[:160]}
    data = json.loads(out)
    rows = {row["key"]: row for row in data["compare"]}
    return {
        **base,
        "version": data["release"]["version"],
        "predicted": data["outcome"]["predicted"],
        "tokens": rows["kv_cache_tokens"]["error"],
        "tokens_uses": rows["kv_cache_tokens"]["uses"],
        "settings_alone": rows["kv_cache_tokens_settings_alone"]["error"],
    }


def report(results: list[dict]) -> dict:
    done = [r for r in results if "skipped" not in r and r.get("tokens") is not None]

    def stats(key: str) -> dict:
        errors = [r[key] for r in done if r[key] is not None]
        return {
            "median": statistics.median(abs(e) for e in errors),
            "worst": max(errors, key=abs),
            "cases": len(errors),
        }

    ooms = [r for r in results if r["outcome"] == "oom"]
    return {
        "tokens": stats("tokens"),
        "settings_alone": stats("settings_alone"),
        "outside_10_percent": [r["case"] for r in done if abs(r["tokens"]) > GOAL_EACH],
        "oom_predicted_to_fail": [r["case"] for r in ooms if r.get("predicted") == "fails"],
        "oom_not_predicted": [r["case"] for r in ooms if r.get("predicted") != "fails"],
        "skipped": [r["case"] for r in results if "skipped" in r],
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2%}"


def main(argv: list[str]) -> int:
    cases = json.loads(DATA.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as where:
        results = [measure(case, Path(where)) for case in cases]
    summary = report(results)
    if "--json" in argv:
        print(json.dumps({"cases": results, **summary}, indent=1))
        return 0
    for r in results:
        if "skipped" in r:
            print(f"{r['case'][:52]:<52} skipped: {r['skipped']}")
            continue
        basis = "measured" if r["tokens_uses"] else "settings"
        print(
            f"{r['case'][:52]:<52} {r['version']:<12} {r['predicted']:<7} tokens {_pct(r['tokens']):>8} ({basis})"
            f"  settings alone {_pct(r['settings_alone']):>8}"
        )
    t, a = summary["tokens"], summary["settings_alone"]
    print()
    print(f"KV tokens ({t['cases']} cases): median {t['median']:.2%}, worst {t['worst']:+.2%}")
    print(f"KV tokens from the settings alone ({a['cases']} cases): median {a['median']:.2%}, worst {a['worst']:+.2%}")
    met = t["median"] <= GOAL_MEDIAN and not summary["outside_10_percent"]
    print(
        f"goal (median <= 2 %, each within 10 %): {'met' if met else 'not met'}; outside 10 %: "
        f"{summary['outside_10_percent'] or 'none'}"
    )
    print(
        f"out of memory at start: predicted to fail {len(summary['oom_predicted_to_fail'])} "
        f"{summary['oom_predicted_to_fail']}; not predicted {summary['oom_not_predicted']}"
    )
    print(f"skipped: {len(summary['skipped'])} {summary['skipped']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

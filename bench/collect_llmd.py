"""Build tests/data/calibration/vllm_0.19_llmd_sweep.json from the llm-d planner's accuracy sweep.

Run: python3 bench/collect_llmd.py GIT_DIR [OUT]
GIT_DIR is a clone of https://github.com/llm-d-incubation/llm-d-planner (a bare mirror is fine); the files are
read at COMMIT with `git show`, so nothing else in the clone matters. One case per run that did not fail
(accuracy/results/v0.19.0/runs/*.json and accuracy/results/version-sweep/runs/*.json) whose log is not
already a case of vllm_startup_logs.json. Each figure is read from the log's own lines by the regexes
below (a reader apart from the project's parser, so the test that re-parses `log_lines` compares two
readings), then held against the run's JSON; where they differ the case's `notes` says so. Runs
without a log in the repository (the version sweep) keep the JSON's figures and say so.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

COMMIT = "d3121e059da88662db39a926a3ead964be97359b"
REPO_URL = "https://github.com/llm-d-incubation/llm-d-planner/blob"
SWEEP = "accuracy/results/v0.19.0"
VERSIONS = "accuracy/results/version-sweep"
DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "calibration"
SEEN = DATA / "vllm_startup_logs.json"
OUT = DATA / "vllm_0.19_llmd_sweep.json"
SOURCE_KIND = "repository log file (vLLM DEBUG startup log captured by the llm-d planner accuracy sweep)"
RUN_KIND = "repository run summary (the llm-d planner's parsed figures; the sweep did not commit this run's log)"

DEV_MODELS = (
    "google/gemma-3-12b-it",
    "Qwen/Qwen3-30B-A3B",
    "openai/gpt-oss-20b",
    "deepseek-ai/DeepSeek-V2-Lite-Chat",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct",
)
"""The startups the sizing helpers may develop against; every other case is held out."""

KEPT_TAGS = {
    "entrypoints/utils.py:233",  # non-default args
    "engine/arg_utils.py:2232",  # Defaulting max_num_batched_tokens
    "engine/arg_utils.py:2242",  # Defaulting max_num_seqs
    "config/scheduler.py:238",  # chunked prefill, batched tokens
    "v1/engine/core.py:105",  # engine config
    "v1/worker/gpu_worker.py:284",  # init memory snapshot
    "v1/worker/gpu_worker.py:285",  # requested memory
    "v1/worker/gpu_model_runner.py:4820",  # Model loading took
    "v1/worker/gpu_model_runner.py:5955",  # Estimated CUDA graph memory
    "v1/worker/gpu_worker.py:430",  # Free memory after profiling
    "v1/worker/gpu_worker.py:435",  # Memory profiling takes ...
    "v1/worker/gpu_worker.py:436",  # Available KV cache memory
    "v1/worker/gpu_worker.py:470",  # the 0.19 CUDA graph notice
    "v1/core/kv_cache_utils.py:1319",  # GPU KV cache size
    "v1/core/kv_cache_utils.py:1324",  # Maximum concurrency
    "v1/worker/gpu_model_runner.py:6046",  # Graph capturing finished
    "v1/worker/gpu_worker.py:661",  # Free memory on device ... Actual usage
    "v1/engine/core.py:283",  # init engine took
    "v1/metrics/loggers.py:273",  # num_gpu_blocks
}
"""The line kinds vllm_startup_logs.json keeps for this sweep ([file:line] tags of 0.19.0)."""
CLASS_EVIDENCE = (
    "Resolved architecture:",
    "attention backend out of potential backends",
    "backend for Unquantized MoE",
    "Mxfp4 MoE backend",
    "Encoder cache will be initialized",
    "ChunkedLocalAttention",
    "CUDA graph pool memory:",
)
"""Lines kept besides those: what the model classes are read from (architecture, attention and MoE
backends, the multimodal encoder budget, chunked local attention) and the captured graph pool."""
CUT = 1000
"""Long lines (the engine config) are cut here, past every setting read from them (vllm_startup_logs.json's
collector cut at 700, which falls inside kv_cache_dtype where a model's name is long)."""
CUT_MARK = " [...truncated by collector]"

TAG = re.compile(r"\[([\w/.]+\.py:\d+)\]")
NUM = r"(-?\d+(?:\.\d+)?)"
INT = r"(\d[\d,]*)"
FIGURES = {
    "total_gpu_memory_gib": (rf"worker init memory snapshot: .*?total_memory={NUM}GiB", min),
    "init_free_memory_gib": (rf"worker init memory snapshot: .*?free_memory={NUM}GiB", min),
    "requested_memory_gib": (rf"worker requested memory: {NUM}GiB", max),
    "weights_gib": (rf"Model loading took {NUM} GiB memory", max),
    "non_kv_cache_total_gib": (rf"Total non KV cache memory: {NUM}GiB", max),
    "activation_peak_gib": (rf"torch peak memory increase: {NUM}GiB", max),
    "non_torch_gib": (rf"non-torch forward increase memory: {NUM}GiB", max),
    "cudagraph_estimated_gib": (rf"Estimated CUDA graph memory: {NUM} GiB total", max),
    "cudagraph_gib": (rf"GiB for non-torch memory, and {NUM} GiB for CUDAGraph memory", max),
    "kv_cache_gib": (rf"Available KV cache memory: {NUM} GiB", min),
    "kv_cache_tokens": (rf"GPU KV cache size: {INT} tokens", min),
    "max_concurrency": (rf"Maximum concurrency for [\d,]+ tokens per request: {NUM}x", min),
    "num_gpu_blocks": (rf"num_gpu_blocks is: {INT}", min),
}
"""Each figure: the regex whose group states it, and which of several ranks' values the engine uses
(the smallest KV budget and GPU total; the largest of the rest, as the project's parser does)."""
RUN_FIGURES = {
    "weights_gib": "weight_memory_gib",
    "activation_peak_gib": "activation_memory_gib",
    "non_torch_gib": "non_torch_forward_memory_gib",
    "cudagraph_estimated_gib": "cuda_graph_memory_gib",
    "kv_cache_gib": "kv_cache_memory_gib",
    "num_gpu_blocks": "kv_cache_blocks",
    "kv_cache_tokens": "kv_cache_tokens",
    "max_concurrency": "max_concurrency",
    "non_kv_cache_total_gib": "total_non_kv_memory_gib",
}
"""A case's figure and the run JSON's name for the same number."""
BLOCK_TOKENS = 16
"""Tokens per block of the attention backends these logs name (FLASH_ATTN on Hopper)."""
RUN_CLASSES = {"Qwen/Qwen3-14B": ("dense",)}
"""Classes of the models whose runs have no log to read them from (Qwen3ForCausalLM: dense, text only)."""


def git_show(git_dir: Path, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(git_dir), "show", f"{COMMIT}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def git_list(git_dir: Path, folder: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(git_dir), "ls-tree", "-r", "--name-only", COMMIT, "--", folder],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return sorted(out.split())


def kept_lines(log: str) -> list[str]:
    """The memory-relevant lines verbatim (cut at CUT characters, marked), in the log's order."""
    out = []
    for line in log.splitlines():
        tag = TAG.search(line)
        if (tag and tag.group(1) in KEPT_TAGS) or any(text in line for text in CLASS_EVIDENCE):
            out.append(line if len(line) <= CUT else line[:CUT] + CUT_MARK)
    return out


def figures(lines: list[str]) -> dict[str, float | int | None]:
    """Each figure as the lines state it; None where no line does."""
    out: dict[str, float | int | None] = {}
    for key, (pattern, pick) in FIGURES.items():
        found = [m.group(1).replace(",", "") for line in lines for m in [re.search(pattern, line)] if m]
        values = [int(v) if key in ("kv_cache_tokens", "num_gpu_blocks") else float(v) for v in found]
        out[key] = pick(values) if values else None
    return out


def _config_value(config: str, name: str) -> str | None:
    match = re.search(rf"(?<![\w.]){name}=('[^']*'|[^,]*)", config)
    return match.group(1).strip("'") if match else None


def settings(lines: list[str]) -> dict:
    """The settings the engine config line, the non-default args and the Defaulting lines state."""
    config = next(line.split("with config: ", 1)[1] for line in lines if "with config: " in line)
    args_line = next(line for line in lines if "non-default args: " in line)
    args = ast.literal_eval(args_line.split("non-default args: ", 1)[1])
    version = re.search(r"LLM engine \((v[\d.]+)\)", next(line for line in lines if "LLM engine (" in line))
    tp = int(_config_value(config, "tensor_parallel_size") or 1)
    pp = int(_config_value(config, "pipeline_parallel_size") or 1)
    dp = int(_config_value(config, "data_parallel_size") or 1)
    quant = _config_value(config, "quantization")
    desired = next(
        (
            float(m.group(1))
            for line in lines
            for m in [re.search(rf"Desired GPU memory utilization is \({NUM},", line)]
            if m
        ),
        None,
    )
    defaulted = {
        key: int(m.group(1))
        for line in lines
        for key in ("max_num_batched_tokens", "max_num_seqs")
        for m in [re.search(rf"Defaulting {key} to (\d+)", line)]
        if m
    }
    return {
        "vllm_version": version.group(1) if version else None,
        "model": _config_value(config, "model"),
        "gpu": f"H100-80GB x{tp * pp * dp}",
        "tensor_parallel_size": tp,
        "dtype": _config_value(config, "dtype"),
        "quantization": None if quant in (None, "None") else quant,
        "kv_cache_dtype": _config_value(config, "kv_cache_dtype"),
        "gpu_memory_utilization": desired or args.get("gpu_memory_utilization"),
        "max_model_len": int(_config_value(config, "max_seq_len") or args.get("max_model_len")),
        "max_num_seqs": args.get("max_num_seqs", defaulted.get("max_num_seqs")),
        "max_num_batched_tokens": args.get("max_num_batched_tokens", defaulted.get("max_num_batched_tokens")),
        "enforce_eager": _config_value(config, "enforce_eager") == "True",
        "gpu_count_world_size": tp * pp * dp,
        "pipeline_parallel_size": pp,
        "data_parallel_size": dp,
        "non_default_args": args,
    }


def classes(lines: list[str], quantization: str | None) -> list[str]:
    """The model classes the log shows: the resolved architecture and the backends vLLM chose."""
    text = "\n".join(lines)
    found = []
    if "MoE backend" in text or "backend for Unquantized MoE" in text:
        found.append("moe")
    if quantization == "mxfp4":
        found.append("mxfp4")
    if "ForConditionalGeneration" in text or "Encoder cache will be initialized" in text:
        found.append("multimodal")
    if re.search(r"Using \w*MLA\w* attention backend", text):
        found.append("mla")
    if "ChunkedLocalAttention" in text:
        found.append("chunked")
    return found or ["dense"]


def _differences(case: dict, run: dict) -> list[str]:
    said = []
    for key in ("tensor_parallel_size", "max_model_len", "gpu_memory_utilization"):
        if run["vllm_args"].get(key) != case[key]:
            said.append(f"{key} {case[key]} in the log lines, {run['vllm_args'].get(key)} in the run JSON")
    for key, run_key in RUN_FIGURES.items():
        mine, theirs = case.get(key), run.get(run_key)
        if theirs is not None and mine != theirs:
            said.append(f"{key} {mine} in the log lines, {run_key} {theirs} in the run JSON")
            if key == "num_gpu_blocks" and theirs == (case.get("kv_cache_tokens") or 0) // BLOCK_TOKENS:
                said[-1] += (
                    f" (the JSON's is the log's KV tokens / {BLOCK_TOKENS}; the engine's blocks are shared by"
                    f" this hybrid-attention model's KV cache groups, its tokens are blocks / groups x {BLOCK_TOKENS})"
                )
    return said


def _base(source: str, kind: str, model: str | None) -> dict:
    return {
        "source": f"{REPO_URL}/{COMMIT}/{source}",
        "source_kind": kind,
        "status": "ok",
        "split": "dev" if model in DEV_MODELS else "heldout",
        "peak_torch_gib": None,  # what the 0.6.4 one-line profile states; V1 logs do not
        "reported_in_text": None,  # figures the seen set took from an issue's prose; these are log lines
    }


def case_from_log(name: str, log: str, run: dict) -> dict:
    lines = kept_lines(log)
    stated = settings(lines)
    case = _base(f"{SWEEP}/logs/{name}.log", SOURCE_KIND, stated["model"])
    case.update(stated)
    case["log_lines"] = lines
    case.update(figures(lines))
    case["classes"] = classes(lines, stated["quantization"])
    case["engine"] = "V1"
    differences = _differences(case, run)
    if run.get("model") != case["model"]:
        differences.append(f"the run JSON names the model {run.get('model')}")
    case["notes"] = "; ".join(differences) or None
    return case


def case_from_run(path: str, run: dict) -> dict:
    """A version-sweep run: the figures of the JSON (no log lines to read them from)."""
    name = Path(path).stem
    version = re.search(r"vllm-v(\d+)-(\d+)-(\d+)", name)
    args = run["vllm_args"]
    tp, pp, dp = args["tensor_parallel_size"], args["pipeline_parallel_size"], args["data_parallel_size"]
    case = _base(path, RUN_KIND, run["model"])
    case.update(
        {
            "vllm_version": f"v{'.'.join(version.groups())}" if version else None,
            "model": run["model"],
            "gpu": f"H100-80GB x{tp * pp * dp}",
            "tensor_parallel_size": tp,
            "dtype": args["dtype"],
            "quantization": args["quantization"],
            "kv_cache_dtype": args["kv_cache_dtype"],
            "gpu_memory_utilization": args["gpu_memory_utilization"],
            "max_model_len": args["max_model_len"],
            "max_num_seqs": None,
            "max_num_batched_tokens": None,
            "enforce_eager": False,
            "gpu_count_world_size": tp * pp * dp,
            "pipeline_parallel_size": pp,
            "data_parallel_size": dp,
            "non_default_args": None,
            "log_lines": [],
        }
    )
    case.update({key: None for key in FIGURES})
    case.update({key: run.get(run_key) for key, run_key in RUN_FIGURES.items()})
    case["classes"] = list(RUN_CLASSES[run["model"]])
    case["engine"] = "V1"
    case["notes"] = (
        "no log in the repository: the figures are the run JSON's (the sweep's own parse of the log it "
        f"wrote to {run.get('log_path')}); vllm_version from the file name (the JSON's is null); "
        "max_num_seqs and max_num_batched_tokens are not stated (vLLM's defaults apply)"
    )
    return case


def seen_logs() -> set[str]:
    """File names of the logs vllm_startup_logs.json already holds."""
    return {case["source"].rsplit("/", 1)[-1] for case in json.loads(SEEN.read_text(encoding="utf-8"))}


def collect(git_dir: Path) -> list[dict]:
    seen, cases = seen_logs(), []
    for path in git_list(git_dir, f"{SWEEP}/runs"):
        name = Path(path).stem
        if f"{name}.log" in seen:
            continue
        run = json.loads(git_show(git_dir, path))
        cases.append(case_from_log(name, git_show(git_dir, f"{SWEEP}/logs/{name}.log"), run))
    for path in git_list(git_dir, f"{VERSIONS}/runs"):
        cases.append(case_from_run(path, json.loads(git_show(git_dir, path))))
    return cases


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python3 bench/collect_llmd.py GIT_DIR [OUT]", file=sys.stderr)
        return 2
    cases = collect(Path(argv[0]))
    out = Path(argv[1]) if len(argv) > 1 else OUT
    out.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(cases)} cases written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

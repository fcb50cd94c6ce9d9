"""Startup-log lines of vLLM (every release) and SGLang that state memory numbers, as regexes.

The vLLM patterns follow the tested set in the project's vLLM memory reference; group names are
the output keys they fill (`weights_gib`, `kv_cache_tokens`, ...). Other groups are read but not kept.
Each rule has a needle: a plain substring checked before the regex runs, so a long log stays cheap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NUM = r"-?\d{1,15}(?:\.\d{1,15})?"  # never lets a sentence-ending '.' into the number
INT = r"\d[\d,]{0,20}"  # token counts may carry thousands separators
# Digit runs are bounded: a number no engine logs is no reading (and never an infinity in --json).

VLLM_PREFIX = re.compile(
    r"^(?:\((?P<proc>[^)]*?)(?<=\S)\s+pid=(?P<pid>\d+)\)\s+)?(?:\[[^\]]*\]\s+)?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)"
    r"\s+\d\d-\d\d\s+\d\d:\d\d:\d\d(?:\.\d+)?\s+\[?[\w/.\-]+\.py:\d+\]?\s(?P<msg>.*)$"
)
SGLANG_PREFIX = re.compile(
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: (?P<rank>[A-Z]{2}\d+(?: [A-Z]{2}\d+)*))?\]\s(?P<msg>.*)$"
)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Rule:
    """One line shape: a substring to look for, the regex, and the engine it belongs to."""

    name: str
    needle: str
    pattern: re.Pattern[str]
    engine: str = "vllm"


def _rule(name: str, needle: str, pattern: str, engine: str = "vllm") -> Rule:
    return Rule(name, needle, re.compile(pattern.replace("{N}", NUM).replace("{I}", INT)), engine)


RULES: tuple[Rule, ...] = (
    _rule(
        "engine_config",
        "LLM engine (",
        r"Initializing an? (?:V[01] )?LLM engine \((?P<vllm_version>v?[^)]{0,64})\) "
        r"with config: (?P<config>.*)",
    ),
    _rule("non_default_args", "non-default args:", r"non-default args: (?P<args>\{.*)"),
    _rule(
        "weights_legacy",
        "Loading model weights took",
        r"Loading model weights took (?P<weights_gib>{N}) Gi?B\b",
    ),
    _rule(
        "weights",
        "Model loading took",
        r"Model loading took (?P<weights_gib>{N}) Gi?B(?: memory)? and "
        r"(?P<seconds>{N}) seconds",
    ),
    # 0.6.4: one line of key=valueGiB pairs (a comma-separated variant in Dec 2024 builds); read pair by pair
    # so a line cut short by a log collector still gives its first values.
    _rule(
        "profile_064",
        "Memory profiling results: ",
        r"Memory profiling results: (?P<profile>.{0,200}?total_gpu_memory=.*)",
    ),
    _rule(
        "profile_065_budget",
        "the current vLLM instance can use total_gpu_memory",
        r"the current vLLM instance can use total_gpu_memory \((?P<total_gpu_memory_gib>{N})GiB\) x "
        r"gpu_memory_utilization \((?P<gpu_memory_utilization>{N})\) = (?P<budget>{N})GiB",
    ),
    _rule(
        "profile_065_split",
        "model weights take",
        r"model weights take (?P<weights_gib>{N})GiB; non_torch_memory "
        r"takes (?P<non_torch_gib>{N})GiB; PyTorch activation peak memory takes "
        r"(?P<activation_peak_gib>{N})GiB; "
        r"the rest of the memory reserved for KV Cache is (?P<kv_cache_gib>{N})GiB",
    ),
    # A development build between 0.6.4 and 0.6.5 printed the profile as a table, one key per line.
    _rule("table_total", "total_gpu_memory", r"^total_gpu_memory\s+(?P<total_gpu_memory_gib>{N})\s*GiB\s*$"),
    _rule(
        "table_util",
        "gpu_memory_utilization",
        r"^gpu_memory_utilization\s+(?P<gpu_memory_utilization>{N})\s*$",
    ),
    _rule("table_weights", "model weights take", r"^model weights take\s+(?P<weights_gib>{N})\s*GiB\s*$"),
    _rule("table_non_torch", "non_torch_memory", r"^non_torch_memory\s+(?P<non_torch_gib>{N})\s*GiB\s*$"),
    _rule(
        "table_activation",
        "activation peak memory",
        r"^PyTorch activation peak memory\s+(?P<activation_peak_gib>{N})\s*GiB\s*$",
    ),
    _rule(
        "table_kv",
        "available_kv_cache_memory",
        r"^available_kv_cache_memory\s+(?P<kv_cache_gib>{N})\s*GiB\s*$",
    ),
    _rule(
        "blocks_v0",
        "blocks: ",
        r"(?:# )?(?P<device>GPU|CUDA|cuda|TPU|HPU|XPU|NPU) blocks: (?P<num_gpu_blocks>{I}), "
        r"# CPU blocks: (?P<num_cpu_blocks>{I})",
    ),
    _rule("blocks_v1_early", "GPU blocks: ", r"# GPU blocks: (?P<num_gpu_blocks>{I})$"),
    _rule(
        "blocks_v1_debug",
        "num_gpu_blocks is",
        r"cache_config_info with initialization after num_gpu_blocks is: "
        r"(?P<num_gpu_blocks>{I})",
    ),
    _rule("available_kv", "Available KV cache memory", r"Available KV cache memory: (?P<kv_cache_gib>{N}) GiB"),
    _rule(
        "kv_tokens",
        "KV cache size: ",
        r"(?<![A-Z])(?P<pool>[A-Z]+(?: \+ host)?) KV cache size: (?P<kv_cache_tokens>{I}) tokens",
    ),
    _rule(
        "max_concurrency",
        "Maximum concurrency for",
        r"Maximum concurrency for (?P<max_model_len>{I}) tokens per "
        r"request: (?P<max_concurrency>{N})x",
    ),
    _rule(
        "graph_capture",
        "Graph capturing finished",
        r"Graph capturing finished in (?P<seconds>\d{1,12}) secs"
        r"(?:, took (?P<cudagraph_gib>{N}) GiB)?",
    ),
    _rule(
        "cudagraph_estimate",
        "Estimated CUDA graph memory",
        r"Estimated CUDA graph memory: (?P<cudagraph_estimated_gib>{N}) GiB total",
    ),
    _rule(
        "actual_usage_v010",
        "GiB for weight,",
        r"Free memory on device \((?P<free>{N})/(?P<total_gpu_memory_gib>{N}) "
        r"GiB\) on startup\. Desired GPU memory utilization is \((?P<gpu_memory_utilization>{N}), "
        r"(?P<requested>{N}) "
        r"GiB\)\. Actual usage is (?P<weights_gib>{N}) GiB for weight, "
        r"(?P<activation_peak_gib>{N}) GiB for peak "
        r"activation, (?P<non_torch_gib>{N}) GiB for non-torch memory, and (?P<cudagraph_gib>{N}) GiB for "
        r"CUDAGraph memory",
    ),
    _rule(
        "actual_usage_v027",
        "for consumed memory",
        r"Free memory on device \((?P<free>{N})/"
        r"(?P<total_gpu_memory_gib>{N}) GiB\) on startup\. Desired GPU memory utilization is "
        r"\((?P<gpu_memory_utilization>{N}), (?P<requested>{N}) GiB\)\. "
        r"Actual usage is (?P<consumed>{N}) GiB for "
        r"consumed memory \(weights \+ non-torch\), (?P<activation_peak_gib>{N}) GiB for peak "
        r"activation, and "
        r"(?P<cudagraph_gib>{N}) GiB for CUDAGraph memory",
    ),
    _rule(
        "profile_debug",
        "Memory profiling takes",
        r"Memory profiling takes (?P<seconds>{N}) seconds\. Total non KV "
        r"cache memory: (?P<non_kv>{N})GiB; torch peak memory increase: (?P<activation_peak_gib>{N})GiB; "
        r"(?:non-torch forward increase memory: (?P<non_torch_gib>{N})GiB|"
        r"total consumed \(from mem_get_info\): "
        r"(?P<consumed>{N})GiB); weights memory: (?P<weights_gib>{N})GiB",
    ),
    _rule(
        "init_snapshot",
        "worker init memory snapshot",
        r"worker init memory snapshot: .{0,400}?free_memory=(?P<free>{N})"
        r"GiB, total_memory=(?P<total_gpu_memory_gib>{N})GiB",
    ),
    _rule(
        "startup_free_error",
        "on startup is less than",
        r"Free memory on device(?: (?P<device>\S+))? "
        r"\((?P<free>{N})/(?P<total_gpu_memory_gib>{N}) GiB\) on startup is less than desired GPU memory "
        r"utilization \((?P<gpu_memory_utilization>{N}), (?P<requested>{N}) GiB\)",
    ),
    _rule(
        "kv_too_small_v1",
        "max seq len",
        r"To serve at least one request with the models?'s max seq len "
        r"\((?P<max_model_len>\d{1,12})\),? \((?P<needed>{N}) GiB KV cache is needed, "
        r"which is larger than the available "
        r"KV cache memory \((?P<kv_cache_gib>{N}) GiB\)\."
        r"(?: Based on the available memory,\s+the estimated maximum "
        r"model length is (?P<estimated>\d{1,12})\.)?",
    ),
    _rule(
        "kv_too_small_v0",
        "max seq len",
        r"The model's max seq len \((?P<max_model_len>\d{1,12})\) is larger than the "
        r"maximum number of tokens that can be stored in KV cache \((?P<kv_cache_tokens>\d{1,12})\)",
    ),
    _rule(
        "no_kv_memory",
        "No available memory for the cache blocks",
        r"No available memory for the cache blocks",
    ),
    _rule(
        "sampler_warmup_oom",
        "warming up sampler",
        r"CUDA out of memory occurred when warming up sampler with "
        r"(?P<num_reqs>\d{1,12}) dummy requests",
    ),
    # The end of a start: the engine finished profiling, allocating the KV cache and warming up, or the
    # API server is up (which it is only once the engine is).
    _rule(
        "startup_complete",
        "init engine (profile, create kv cache, warmup model) took",
        r"init engine \(profile, create kv cache, warmup model\) took (?P<seconds>{N}) seconds",
    ),
    _rule("server_ready", "Application startup complete", r"Application startup complete", ""),
    _rule("cuda_oom", "", r"(?:CUDA out of memory|OutOfMemoryError|CUDA error: out of memory)", ""),
    # SGLang (its "GB" values are divided by 2^30, so they are GiB).
    _rule(
        "sg_weights_begin",
        "Load weight begin",
        r"Load weight begin\. avail mem=(?P<free_before_weights_gib>{N}) GB",
        "sglang",
    ),
    _rule(  # `type=..., dtype=...` (every release), `elapsed=... s, ` (late 0.5.x), `quant=..., fmt=...` (V4 builds)
        "sg_weights",
        "Load weight end",
        r"Load weight end\. (?:[^\n]{0,200}?dtype=(?P<dtype>[^,]{1,64}), )?[^\n]{0,400}?"
        r"avail mem=(?P<free_after_weights_gib>{N}) GB"
        r"(?:, mem usage=(?P<weights_gib>{N}) GB)?",
        "sglang",
    ),
    _rule(
        "sg_kv",
        "KV Cache is allocated",
        r"KV Cache is allocated\. (?:#tokens: (?P<kv_cache_tokens>{I}), )?"
        r"(?:K size: (?P<k_gib>{N}) GB, V size: (?P<v_gib>{N}) GB|KV size: (?P<kv_cache_gib>{N}) GB)",
        "sglang",
    ),
    _rule(
        "sg_pool_end",
        "Memory pool end",
        r"Memory pool end\. avail mem=(?P<free_after_pool_gib>{N}) GB",
        "sglang",
    ),
    _rule(
        "sg_graph",
        "Capture cuda graph end",
        r"Capture cuda graph end\. Time elapsed: (?P<seconds>{N}) s\. "
        r"(?:avail mem=(?P<after>{N}) GB\. )?mem usage=(?P<cudagraph_gib>{N}) GB",
        "sglang",
    ),
    _rule(
        "sg_pool",
        "max_total_num_tokens=",
        r"^max_total_num_tokens=(?P<kv_cache_tokens>\d{1,12})"
        r"(?:[^\n]{0,200}?max_running_requests=(?P<max_running_requests>\d{1,12}))?"
        r"(?:[^\n]{0,200}?context_len=(?P<max_model_len>\d{1,12}))?",
        "sglang",
    ),
    _rule("sg_server_args", "server_args=ServerArgs(", r"server_args=ServerArgs\((?P<server_args>.*)", "sglang"),
    _rule(
        "sg_not_enough",
        "Not enough memory",
        r"Not enough memory\. Please try to increase --mem-fraction-static",
        "sglang",
    ),
    _rule(  # newer builds' wording of the same failure, with the fraction in force
        "sg_no_kv_memory",
        "leave no GPU memory for the KV cache",
        r"Loaded weights leave no GPU memory for the KV cache under "
        r"--mem-fraction-static=(?P<gpu_memory_utilization>{N})",
        "sglang",
    ),
)

"""Where the real logs, payloads and facts the tests read live: tests/data, inside the checkout.

tests/data/README.md says where each file came from. Nothing here points outside the repository, so a
fresh clone runs every test (tests/test_self_contained.py checks that no test reads beside the checkout).
"""

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
CALIBRATION = DATA / "calibration" / "vllm_startup_logs.json"
"""Real vLLM startup cases: settings, memory log lines verbatim, the numbers those lines state."""
SGLANG_CALIBRATION = DATA / "calibration" / "sglang_startup_logs.json"
"""Real SGLang launches: settings, memory log lines verbatim, outcome, each with its source."""
LLMD_SWEEP = DATA / "calibration" / "vllm_0.19_llmd_sweep.json"
"""The llm-d planner's v0.19.0 H100 startups that CALIBRATION lacks, each with `classes` and `split`."""
GRAPH_ESTIMATES = DATA / "calibration" / "vllm_0.19_cudagraph_estimates.json"
"""Six v0.19.0 H100 startups' CUDA-graph profiling lines verbatim (per mode: first capture, per-graph cost)."""
METRICS = DATA / "calibration" / "metrics"
"""/metrics payloads from real servers or their docs, each opening with a `# source:` line."""
REFERENCE = DATA / "reference" / "catalog_reference.json"
"""config.json facts of the catalog's models and the GPUs' specifications, each with its sources."""
HUB_CONFIGS = DATA / "hub_configs"
"""config.json files as the Hugging Face Hub serves them, for families the reader must know."""

STATED_FIGURES = (
    "total_gpu_memory_gib",
    "weights_gib",
    "non_torch_gib",
    "activation_peak_gib",
    "cudagraph_estimated_gib",
    "cudagraph_gib",
    "kv_cache_gib",
    "num_gpu_blocks",
    "kv_cache_tokens",
    "max_concurrency",
)
"""The memory figures a calibration case states, each read from its own log lines."""
STATED_SETTINGS = (
    "vllm_version",
    "model",
    "tensor_parallel_size",
    "dtype",
    "quantization",
    "kv_cache_dtype",
    "gpu_memory_utilization",
    "max_model_len",
)
"""The settings a calibration case states."""

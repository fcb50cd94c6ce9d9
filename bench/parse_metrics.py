"""Select-then-parse against a full prometheus_client parse, on a ~150 KB vLLM-like /metrics payload.

Run: python3 bench/parse_metrics.py   (prints sizes, per-operation costs and the ratio; goal >= 30x)
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client import CollectorRegistry, Histogram, generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from gpumem_tui.demo import ManualClock, SimulatedNode, load_scenario  # noqa: E402
from gpumem_tui.demo.engine_exposition import exposition  # noqa: E402
from gpumem_tui.sources.engines.parse import ALL_FAMILIES, parse_metrics  # noqa: E402
from gpumem_tui.sources.engines.prometheus import forget_lines, parse_families  # noqa: E402

MODELS = ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct")
HISTOGRAMS = (
    "time_to_first_token_seconds",
    "inter_token_latency_seconds",
    "e2e_request_latency_seconds",
    "request_queue_time_seconds",
    "request_inference_time_seconds",
    "request_prefill_time_seconds",
    "request_decode_time_seconds",
    "request_prompt_tokens",
    "request_generation_tokens",
    "iteration_tokens_total",
    "request_max_num_generation_tokens",
    "request_params_n",
    "request_params_max_tokens",
    "time_per_output_token_seconds",
    "request_time_per_output_token_seconds",
    "kv_block_lifetime_seconds",
    "kv_block_idle_before_evict_seconds",
    "kv_block_reuse_gap_seconds",
    "model_forward_time_milliseconds",
    "model_execute_time_milliseconds",
)
BUCKETS = tuple(round(0.001 * 1.5**i, 6) for i in range(30))


def payload() -> str:
    """The healthy-8b demo engine as two models (mock V1 exposition) plus 20 histograms x 2 models x 30 buckets."""
    clock = ManualClock()
    node = SimulatedNode(load_scenario("healthy-8b"), clock=clock)
    clock.set(300)
    served = node.engine_states()[0]
    engines = [served.model_copy(update={"model": m}) for m in MODELS]
    registry = CollectorRegistry(auto_describe=False)
    for name in HISTOGRAMS:
        hist = Histogram(f"vllm:{name}", name, ["model_name", "engine"], buckets=BUCKETS, registry=registry)
        for i, model in enumerate(MODELS):
            for k in range(50):
                hist.labels(model, "0").observe(0.002 * (k + 1) * (i + 1))
    return exposition("vllm-v1", engines).decode() + generate_latest(registry).decode()


def cost(fn, number: int) -> float:
    """Best-of-5 seconds per call."""
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def main() -> None:
    text = payload()
    full = cost(lambda: list(text_string_to_metric_families(text)), 20)
    # each a first parse: lines parsed before are kept (prometheus._samples), and a payload is parsed once
    select = cost(lambda: (forget_lines(), parse_families(text, ALL_FAMILIES)), 200)
    records = cost(lambda: (forget_lines(), parse_metrics(text)), 200)
    lines = text.count("\n")
    print(f"payload: {len(text) / 1024:.0f} KiB, {lines:,} lines, {len(HISTOGRAMS) * len(MODELS)} histograms")
    print(f"full prometheus_client parse : {full * 1e3:8.3f} ms/op")
    print(f"select-then-parse            : {select * 1e3:8.3f} ms/op")
    print(f"select-then-parse + normalize: {records * 1e3:8.3f} ms/op")
    print(f"ratio full / select-then-parse: {full / select:.0f}x (goal >= 30x)")
    print(f"ratio full / parse_metrics    : {full / records:.0f}x")


if __name__ == "__main__":
    main()

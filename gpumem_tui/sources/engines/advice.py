"""The flags a finding names when it advises on an engine, per engine kind: one table, read through the engine
registry (`Engine.advice`), so every finding says `--mem-fraction-static` to an SGLang engine and
`--gpu-memory-utilization` to a vLLM one, and none writes an engine's flag itself."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Advice:
    """An engine's flags by what they change."""

    memory: str
    """The share of the GPU's memory it takes (its KV pool grows and shrinks with it)."""
    requests: str
    """The cap on requests running at once."""
    context: str
    """The longest context it serves."""
    kv_fp8: str
    """An FP8 KV cache, written in full."""
    pool_cap: str | None = None
    """A cap on the KV pool in tokens, where the engine has one."""
    prefill: str | None = None
    """The tokens one prefill step takes (its activation peak grows with it)."""

    def lower_memory(self) -> str:
        """`--gpu-memory-utilization`, or `--mem-fraction-static (or a --max-total-tokens cap)`."""
        return self.memory if self.pool_cap is None else f"{self.memory} (or a {self.pool_cap} cap)"


VLLM = Advice("--gpu-memory-utilization", "--max-num-seqs", "--max-model-len", "--kv-cache-dtype fp8")
SGLANG = Advice(
    "--mem-fraction-static",
    "--max-running-requests",
    "--context-length",
    "--kv-cache-dtype fp8_e4m3",
    pool_cap="--max-total-tokens",
    prefill="--chunked-prefill-size",
)

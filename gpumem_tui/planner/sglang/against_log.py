"""SGLang's predicted startup held against its log, line by line, each row saying which of the log's own
measurements it was computed from (so a row is never the log's number compared with itself unsaid).

Three predictions feed the rows: `alone` from the settings only (free memory from the card, weights from
the model), `before` with the log's free memory before the weights, `chained` with its free memory before
and after them (SGLang's own sums on its own measurements: the pool, what the pool leaves, the caps)."""

from __future__ import annotations

from dataclasses import dataclass

from gpumem_tui.planner.sglang.records import SglangPrediction
from gpumem_tui.planner.vllm.against_log import Versus
from gpumem_tui.units import GIB

BEFORE = "free_before_weights_gib"
AFTER = "free_after_weights_gib"


class SglangVersus(Versus):
    """A row of the comparison and the log's keys its prediction used (empty: from the settings alone)."""

    uses: list[str]


@dataclass(frozen=True)
class Predictions:
    alone: SglangPrediction
    before: SglangPrediction
    chained: SglangPrediction
    uses_before: bool
    uses_after: bool
    before_derived: bool = False
    """The log's free memory before the weights is its after + mem usage: the free-after row is then
    predicted from the settings alone (else it would be the log's own number less the predicted weights)."""


def versus(p: Predictions, stated: dict) -> list[SglangVersus]:
    before = [BEFORE] if p.uses_before else []
    chain = before + ([AFTER] if p.uses_after else [])
    a, c = p.alone, p.chained
    rows = [
        ("free before weights (GiB)", BEFORE, a.total_bytes / GIB, []),
        ("weights, mem usage (GiB)", "weights_gib", a.weights_bytes / GIB, []),
        ("free after weights (GiB)", AFTER, *_after_row(p, before)),
        ("KV cache, K + V (GiB)", "kv_cache_gib", c.kv_cache_bytes / GIB, chain),
        ("KV cache tokens", "kv_cache_tokens", c.kv_cache_tokens, chain),
        ("KV cache tokens, settings alone", "kv_cache_tokens_settings_alone", a.kv_cache_tokens, []),
        ("free after the pool (GiB)", "free_after_pool_gib", c.left_after_pool_bytes / GIB, chain),
        ("CUDA graphs, captured (GiB)", "cudagraph_gib", c.cudagraph_bytes / GIB, []),
        ("max running requests", "max_running_requests", c.max_running_requests, chain),
    ]
    out = []
    for label, key, value, uses in rows:
        real = stated.get("kv_cache_tokens" if key == "kv_cache_tokens_settings_alone" else key)
        error = (float(value) - real) / real if real else None
        out.append(SglangVersus(label=label, key=key, predicted=float(value), stated=real, error=error, uses=uses))
    return out


def _after_row(p: Predictions, before: list[str]) -> tuple[float, list[str]]:
    if p.before_derived:
        return p.alone.avail_bytes / GIB, []
    return p.before.avail_bytes / GIB, before

"""SGLang's KV pool: the formula of `profile_max_num_token` and what `init_memory_pool` does after it.

    rest   = avail - total x (1 - mem_fraction_static)
    tokens = int(rest x 2**30 // cell_size)        (here in bytes: the same number)

`total` is the free memory measured before the weights load, `avail` after (reference section 1). Then
the count grows for speculative decoding, is clamped by --max-total-tokens and rounded down to the page
size; the request table and max_running_requests follow from it."""

from __future__ import annotations

from dataclasses import dataclass

from gpumem_tui.planner.sglang.versions import Rules

INT32 = 4
REQ_EXTRA_COLUMNS = 4
"""ReqToTokenPool rows are context_len + 4 int32 wide (model_runner.py `extra_max_context_len`)."""


def profiled_tokens(total: float, avail: float, fraction: float, cell: int) -> int:
    """The profiled count from free memory before and after the weights (bytes; the log's GB are GiB)."""
    rest = avail - total * (1 - fraction)
    return int(rest // cell)


@dataclass(frozen=True)
class Requests:
    """What follows from the token count: the request table and the running cap."""

    max_num_reqs: int
    table_rows: int
    table_bytes: int
    max_running_requests: int


def default_max_num_reqs(rules: Rules, tokens: int, context_len: int) -> int:
    """min(max(int(tokens / context_len x 512), 2048), cap) (model_runner.py:1677-1685 at 0.5.6)."""
    return min(max(int(tokens / context_len * 512), 2048), rules.max_num_reqs_cap)


@dataclass(frozen=True)
class Speculative:
    """Speculative decoding's settings (EAGLE and STANDALONE enlarge the shared pool)."""

    algorithm: str | None
    steps: int
    topk: int
    draft_tokens: int

    @property
    def enlarges_pool(self) -> bool:
        return (self.algorithm or "").upper() in ("EAGLE", "EAGLE3", "STANDALONE")


def final_tokens(profiled: int, max_num_reqs: int, spec: Speculative, max_total: int | None, page: int) -> int:
    """Enlarged for speculative decoding (draft + verify + 100), clamped by --max-total-tokens, rounded
    down to the page size (model_runner.py:1700-1733 at 0.5.6)."""
    tokens = profiled
    if spec.enlarges_pool:
        tokens += max_num_reqs * (spec.steps * spec.topk + spec.draft_tokens) + 100
    if max_total is not None:
        tokens = min(tokens, max_total)
    return tokens // page * page


def requests(
    rules: Rules, reqs: int, tokens: int, context_len: int, given: int | None, dp_size: int, draft_tokens: int = 0
) -> Requests:
    """`reqs` is max_num_reqs (--max-running-requests, else `default_max_num_reqs` of the profiled count);
    the request table holds reqs (+1 before 0.4.7) rows of context_len + 4 (+ draft tokens) int32, and
    max_running_requests = min(tokens // 2, or the given value // dp under DP attention, the table's rows)
    (tp_worker.py:289-297 at 0.5.6)."""
    rows = reqs + rules.req_pool_extra_row
    width = context_len + REQ_EXTRA_COLUMNS + draft_tokens
    running = tokens // 2 if given is None else given // dp_size
    return Requests(reqs, rows, rows * width * INT32, min(running, rows))

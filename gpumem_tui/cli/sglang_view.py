"""`plan --engine sglang` as text: the fraction SGLang picks and why, its KV pool, what is left for CUDA
graphs and activations, and the lines it will log (whose "GB" are GiB, as SGLang prints them)."""

from __future__ import annotations

from rich.text import Text

from gpumem_tui.cli.outlook import print_outlook
from gpumem_tui.cli.output import say, table
from gpumem_tui.planner.sglang.records import SglangPrediction
from gpumem_tui.units import GIB


def _rows(p: SglangPrediction) -> list[list[str]]:
    measured = {True: "measured", False: "predicted"}
    return [
        [name, f"{value / GIB:,.2f}"]
        for name, value in [
            (f"free before the weights load ({measured[p.total_measured]})", p.total_bytes),
            ("weights", p.weights_bytes),
            (f"free after the weights load ({measured[p.avail_measured]})", p.avail_bytes),
            (f"kept outside the fraction: total x (1 - {p.mem_fraction_static:.3f})", p.reserve_bytes),
            ("KV pool (rest, before rounding)", p.rest_bytes),
            ("request table", p.req_to_token_bytes),
            ("left after the pool", p.left_after_pool_bytes),
            ("backend workspace (estimate)", p.workspace_bytes),
            ("CUDA graphs (estimate)", p.cudagraph_bytes),
            ("activations (estimate)", p.activation_bytes),
            ("left after graphs and activations", p.left_after_graphs_bytes),
        ]
    ]


def print_sglang(out, p: SglangPrediction, gpus: int) -> None:
    how = "given" if p.fraction_given else "SGLang's default"
    say(out, f"mem_fraction_static {p.mem_fraction_static:.3f} ({how}: {p.fraction_rule})")
    out.print(table(f"SGLang {p.version} on each of {gpus} GPU(s)", ["per GPU", "GiB"], _rows(p), {1}))
    swa = f" (and {p.swa_tokens:,} in the sliding-window layers)" if p.swa_tokens is not None else ""
    out.print(
        Text(
            f"KV pool {p.kv_cache_tokens:,} tokens{swa} at {p.cell_bytes:,} bytes per token; max_running_requests "
            f"{p.max_running_requests:,}; chunked_prefill_size {p.chunked_prefill_size:,}, cuda_graph_max_bs "
            f"{p.cuda_graph_max_bs}, page_size {p.page_size}, context_len {p.context_len:,}"
        )
    )
    print_outlook(out, 'Predicted log lines (SGLang prints GiB and calls them "GB"):', p)

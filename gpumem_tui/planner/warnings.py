"""Plain-language warnings about a plan: what to look at before trusting it."""

from __future__ import annotations

import math

from gpumem_tui.planner.kv import kv_heads_per_gpu
from gpumem_tui.planner.records import Plan
from gpumem_tui.planner.vllm.lengths import longest_accepted
from gpumem_tui.units import GB, GIB, fmt

AMBER = 0.05
LOOK_AGAIN = 0.10


def room(n_bytes: int) -> str:
    """Spare rounded down and a shortfall rounded up, to 0.1 GB and 0.1 GiB (the seeds' convention: a plan
    never promises more room than there is): `11.7 GB (10.9 GiB)` for 11.76 GB."""
    toward = math.floor if n_bytes >= 0 else math.ceil
    gb, gib = (toward(round(n_bytes / unit * 10, 6)) / 10 for unit in (GB, GIB))
    return f"{abs(gb):,.1f} GB ({abs(gib):,.1f} GiB)"


def plan_warnings(plan: Plan) -> list[str]:
    """Every warning that applies, most important first."""
    return fit_warnings(plan) + setting_warnings(plan)


def fit_warnings(plan: Plan) -> list[str]:
    """What the plain method says about the fit itself (not shown when an engine's sizing decides)."""
    inp, out = plan.input, []
    if plan.split_problem:
        out.append(f"invalid split: {plan.split_problem}")
    if plan.kv_pool_bytes < 0:
        out.append(
            f"does not start: weights and overhead exceed the {inp.utilization:.0%} budget of "
            f"{plan.gpus} GPU(s) by {room(plan.kv_pool_bytes)} before any KV cache"
        )
    elif not plan.fits and not plan.split_problem:
        out.append(f"does not fit: short by {room(plan.spare_bytes)} on {plan.gpus} GPU(s)")
    elif plan.fits:
        out += thin_warnings(plan.spare_fraction, "spare")
    return out


def thin_warnings(spare_fraction: float, what: str) -> list[str]:
    """A plan that fits with little to spare: under 5 % breaks on any growth, under 10 % deserves a look."""
    if spare_fraction < AMBER:
        return [f"under 5 % {what} ({spare_fraction:.1%}): any growth or another process breaks it"]
    if spare_fraction < LOOK_AGAIN:
        return [
            f"under 10 % {what} ({spare_fraction:.1%}): look again; acceptable only if "
            "conversations are rarely all at full length together"
        ]
    return []


def setting_warnings(plan: Plan) -> list[str]:
    """What deserves a look whichever method decides: the split, the context, the format, the capacity."""
    inp, out = plan.input, _model_warnings(plan)
    if inp.gpu.capacity_is_nominal and not inp.capacity_bytes:
        out.append(
            f"{inp.gpu.key}: using the nominal {fmt(inp.gpu.capacity_bytes, 'GiB')}; "
            "the reported total is a little smaller"
        )
    return out


def _model_warnings(plan: Plan) -> list[str]:
    inp, model, out = plan.input, plan.input.model, []
    longest = longest_accepted(model)
    if longest and inp.context > longest:
        out.append(f"context {inp.context:,} tokens exceeds {model.id}'s maximum of {longest:,}")
    heads = inp.kv_heads or model.kv_heads
    if model.mla is None and plan.gpus > heads:
        out.append(
            f"{plan.gpus} GPUs exceed the {heads} KV heads: each GPU keeps "
            f"{kv_heads_per_gpu(model, plan.gpus, inp.kv_heads)} replicated head, so the KV cache "
            f"is stored {plan.gpus / heads:g} times over"
        )
    if model.mla is not None and plan.gpus > 1:
        out.append("MLA latent cache is replicated on every GPU: the split does not shrink KV per token")
    ckpt = model.checkpoint_format
    if ckpt and ckpt != inp.weights_format.name and inp.weights_format.bits_per_param > 8:
        out.append(
            f"{model.id} is published in {ckpt}; {inp.weights_format.name} means converting it "
            "and holding more bytes than the released checkpoint"
        )
    return out

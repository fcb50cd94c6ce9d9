"""A plan in words (the verdict) and as the documented JSON object."""

from __future__ import annotations

from gpumem_tui.planner.records import Plan
from gpumem_tui.units import fmt, fmt_both


def verdict(plan: Plan) -> str:
    """One or two sentences a person can act on."""
    inp, where = plan.input, f"{plan.gpus} x {plan.input.gpu.key}"
    if plan.split_problem:
        head = f"Cannot split over {plan.gpus} GPUs: {plan.split_problem}."
    elif plan.fits:
        head = (f"Fits on {where} with {fmt_both(plan.spare_bytes)} spare, {plan.spare_fraction:.1%} of the usable "
                f"{fmt(plan.per_gpu.usable_bytes * plan.gpus)}.")
    elif plan.kv_pool_bytes < 0:
        head = f"Does not start on {where}: the weights and overhead alone exceed the budget."
    else:
        head = f"Does not fit on {where}: short by {fmt_both(-plan.spare_bytes)}."
    fewest = (f" Fewest GPUs that fit: {plan.fewest_gpus}." if plan.fewest_gpus
              else " Not even 8 of these GPUs fit this load.")
    room = ""
    if not plan.split_problem and plan.kv_pool_bytes > 0:
        longest = plan.max_context_at_users
        room = (f" These GPUs hold {plan.max_users_at_context:,} conversation(s) of {inp.context:,} tokens"
                + (f", or {inp.users:,} of up to {longest:,} tokens." if longest else "."))
    return head + fewest + room


def plan_json(plan: Plan) -> dict:
    """The stable JSON schema documented in docs/plan-json.md."""
    inp = plan.input
    return {
        "model": inp.model.id,
        "gpu": inp.gpu.key,
        "weights_format": inp.weights_format.name,
        "kv_dtype": inp.kv_dtype,
        "context": inp.context,
        "users": inp.users,
        "utilization": inp.utilization,
        "params_total": plan.params_total,
        "params_active": plan.params_active,
        "weights_bytes": plan.weights_bytes,
        "kv_bytes_per_token": plan.kv_bytes_per_token,
        "kv_bytes": plan.kv_bytes,
        "gpus": plan.gpus,
        "per_gpu": {
            "capacity_bytes": plan.per_gpu.capacity_bytes,
            "usable_bytes": plan.per_gpu.usable_bytes,
            "overhead_bytes": next(b.bytes for b in plan.per_gpu.bands if b.name == "overhead"),
            "bands": [{"name": b.name, "bytes": b.bytes} for b in plan.per_gpu.bands],
        },
        "fits": plan.fits,
        "spare_bytes": plan.spare_bytes,
        "spare_fraction": round(plan.spare_fraction, 6),
        "fewest_gpus": plan.fewest_gpus,
        "max_users_at_context": plan.max_users_at_context,
        "max_context_at_users": plan.max_context_at_users,
        "kv_pool_bytes": plan.kv_pool_bytes,
        "split_problem": plan.split_problem,
        "verdict": verdict(plan),
        "warnings": list(plan.warnings),
    }

"""One serving plan: per-GPU bands, fit, spare, fewest GPUs and the inverse questions."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpumem_tui.planner.kv import kv_bytes_per_token, sequence_bytes_per_gpu
from gpumem_tui.planner.parallel import SPLITS, split_problem
from gpumem_tui.planner.params import count_params
from gpumem_tui.planner.records import Band, GpuBudget, Plan, PlanInput
from gpumem_tui.planner.vllm.lengths import longest_accepted
from gpumem_tui.planner.warnings import plan_warnings
from gpumem_tui.planner.weights import weights_bytes_per_gpu

AMBER_FRACTION = 0.05
_CONTEXT_SEARCH_LIMIT = 100_000_000


@dataclass(frozen=True)
class _Gpu:
    """One rank's arithmetic for a split: fixed weights, KV per conversation, the utilization budget."""

    inp: PlanInput
    tp: int

    @property
    def weights(self) -> int:
        if self.inp.weights_bytes_override:
            return math.ceil(self.inp.weights_bytes_override / self.tp)
        return weights_bytes_per_gpu(self.inp.model, self.inp.weights_format, self.tp)

    @property
    def budget(self) -> int:
        return math.floor(self.inp.capacity * self.inp.utilization)

    def sequence(self, context: int) -> int:
        inp = self.inp
        return sequence_bytes_per_gpu(inp.model, context, inp.kv_dtype, self.tp, inp.kv_heads)

    def overhead(self, weights: int, kv: int) -> int:
        if self.inp.overhead_fraction is not None:
            return math.ceil((weights + kv) * self.inp.overhead_fraction)
        return self.inp.overhead_bytes

    def spare(self, users: int, context: int) -> int:
        """Budget left after weights, KV for `users` x `context`, and overhead (negative when over)."""
        kv = users * self.sequence(context)
        return self.budget - self.weights - kv - self.overhead(self.weights, kv)


def make_plan(inp: PlanInput) -> Plan:
    """Plan on the given split, or on the fewest of 1/2/4/8 GPUs that fit (8 when none does)."""
    fewest = fewest_gpus(inp)
    tp = inp.gpus or fewest or SPLITS[-1]
    gpu = _Gpu(inp, tp)
    weights, kv_gpu = gpu.weights, inp.users * gpu.sequence(inp.context)
    overhead = gpu.overhead(weights, kv_gpu)
    usable = gpu.budget - overhead
    spare_gpu = usable - weights - kv_gpu
    problem = split_problem(inp.model, tp, inp.kv_heads)
    params = count_params(inp.model)
    bands = [
        Band(name="weights", bytes=weights),
        Band(name="kv_cache", bytes=kv_gpu),
        Band(name="overhead", bytes=overhead),
        Band(name="spare", bytes=spare_gpu),
        Band(name="reserved_by_utilization", bytes=inp.capacity - gpu.budget),
    ]
    plan = Plan(
        input=inp,
        params_total=params.total,
        params_active=params.active,
        weights_bytes=weights * tp,
        kv_bytes_per_token=kv_bytes_per_token(inp.model, inp.kv_dtype, inp.kv_heads),
        kv_bytes=kv_gpu * tp,
        gpus=tp,
        per_gpu=GpuBudget(capacity_bytes=inp.capacity, usable_bytes=usable, bands=bands),
        fits=problem is None and usable > 0 and spare_gpu >= 0,
        spare_bytes=spare_gpu * tp,
        spare_fraction=spare_gpu / usable if usable > 0 else -1.0,
        fewest_gpus=fewest,
        max_users_at_context=max_users(gpu, inp.context),
        max_context_at_users=max_context(gpu, inp.users),
        kv_pool_bytes=(gpu.budget - weights - gpu.overhead(weights, 0)) * tp,
        split_problem=problem,
        warnings=[],
    )
    return plan.model_copy(update={"warnings": plan_warnings(plan)})


def fits_on(inp: PlanInput, tp: int) -> bool:
    """Whether the heads split over `tp` GPUs and weights + KV + overhead stay inside the budget."""
    if split_problem(inp.model, tp, inp.kv_heads):
        return False
    return _Gpu(inp, tp).spare(inp.users, inp.context) >= 0


def fewest_gpus(inp: PlanInput) -> int | None:
    """The smallest split of 1, 2, 4 or 8 that fits, or None."""
    return next((tp for tp in SPLITS if fits_on(inp, tp)), None)


def max_users(gpu: _Gpu, context: int) -> int:
    """Most conversations of `context` tokens that fit on this split: none past the model's maximum, a
    length vLLM refuses to start with (planner/vllm/lengths.py)."""
    longest = longest_accepted(gpu.inp.model)
    if longest and context > longest:
        return 0
    per_user = gpu.sequence(context)
    if gpu.spare(0, context) < 0:
        return 0
    if per_user == 0:
        return 0
    high = gpu.budget // per_user + 1
    return _last_true(lambda users: gpu.spare(users, context) >= 0, 0, high)


def max_context(gpu: _Gpu, users: int) -> int | None:
    """Longest context every one of `users` conversations can have at once (capped at the longest vLLM
    starts with)."""
    if users == 0:
        return None
    limit = longest_accepted(gpu.inp.model) or _CONTEXT_SEARCH_LIMIT
    if gpu.spare(users, 1) < 0:
        return 0
    return _last_true(lambda context: gpu.spare(users, context) >= 0, 1, limit)


def _last_true(ok, low: int, high: int) -> int:
    """Largest n in [low, high] with ok(n), given ok(low) and ok monotone decreasing."""
    while low < high:
        mid = (low + high + 1) // 2
        if ok(mid):
            low = mid
        else:
            high = mid - 1
    return low

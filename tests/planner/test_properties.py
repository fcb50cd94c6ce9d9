"""Properties that must hold for every model, GPU and load (hypothesis)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from gpumem_tui.catalog import load_catalog
from gpumem_tui.planner.budget import make_plan
from gpumem_tui.planner.kv import kv_bytes_total
from gpumem_tui.planner.records import PlanInput
from gpumem_tui.planner.vllm.lengths import longest_accepted
from gpumem_tui.planner.weights import weights_bytes_per_gpu

CATALOG = load_catalog()
models = st.sampled_from(sorted(CATALOG.models))
gpus = st.sampled_from(sorted(CATALOG.gpus))
formats = st.sampled_from(sorted(CATALOG.formats))
kv_dtypes = st.sampled_from(["auto", "fp8", "fp32"])
splits = st.sampled_from([1, 2, 4, 8])


@settings(max_examples=200, deadline=None)
@given(
    models, kv_dtypes, st.integers(0, 64), st.integers(1, 200_000), st.integers(0, 8), st.integers(0, 50_000), splits
)
def test_more_context_or_users_never_needs_less(model, kv_dtype, users, context, more_users, more_context, tp):
    spec = CATALOG.models[model]
    base = kv_bytes_total(spec, users, context, kv_dtype, tp)
    assert kv_bytes_total(spec, users + more_users, context, kv_dtype, tp) >= base
    assert kv_bytes_total(spec, users, context + more_context, kv_dtype, tp) >= base


@settings(max_examples=200, deadline=None)
@given(models, formats)
def test_more_gpus_never_need_more_weight_bytes_per_gpu(model, fmt):
    spec, fmt_spec = CATALOG.models[model], CATALOG.formats[fmt]
    per_gpu = [weights_bytes_per_gpu(spec, fmt_spec, tp) for tp in (1, 2, 4, 8)]
    assert per_gpu == sorted(per_gpu, reverse=True)


@settings(max_examples=200, deadline=None)
@given(
    models,
    gpus,
    formats,
    kv_dtypes,
    st.integers(0, 256),
    st.integers(1, 300_000),
    st.one_of(st.none(), splits),
    st.floats(0.05, 1.0),
    st.integers(0, 20 * 10**9),
)
def test_bands_always_sum_to_capacity(model, gpu, fmt, kv_dtype, users, context, tp, utilization, overhead):
    plan = make_plan(
        PlanInput(
            model=CATALOG.models[model],
            gpu=CATALOG.gpus[gpu],
            weights_format=CATALOG.formats[fmt],
            kv_dtype=kv_dtype,
            users=users,
            context=context,
            gpus=tp,
            utilization=utilization,
            overhead_bytes=overhead,
        )
    )
    assert sum(band.bytes for band in plan.per_gpu.bands) == plan.per_gpu.capacity_bytes
    assert plan.spare_bytes == plan.gpus * plan.per_gpu.usable_bytes - plan.weights_bytes - plan.kv_bytes
    if context > spec_max(model):  # a length vLLM and SGLang refuse: no conversation of it is promised
        assert plan.max_users_at_context == 0
    elif plan.fits:
        assert plan.max_users_at_context >= users
        assert plan.max_context_at_users is None or plan.max_context_at_users >= min(context, spec_max(model))


def spec_max(model):
    return longest_accepted(CATALOG.models[model]) or 10**9

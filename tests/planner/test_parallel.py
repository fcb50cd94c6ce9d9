"""Tensor-parallel splits: head divisibility explained, KV heads replicated past their count."""

from gpumem_tui.planner.budget import make_plan
from gpumem_tui.planner.kv import kv_bytes_total
from gpumem_tui.planner.parallel import split_problem, valid_splits
from gpumem_tui.planner.records import PlanInput


def test_heads_must_divide_by_the_split(catalog):
    qwen = catalog.model("qwen2.5-7b")  # 28 attention heads, 4 KV heads
    problem = split_problem(qwen, 8)
    assert "28 attention heads" in problem and "8 GPUs" in problem and problem.endswith("valid splits: 1, 2, 4")
    assert split_problem(qwen, 4) is None
    assert split_problem(catalog.model("llama-3.1-70b"), 3) is not None


def test_kv_heads_replicate_when_the_split_exceeds_them(catalog):
    model = catalog.model("llama-3.1-8b")  # 8 KV heads
    assert kv_bytes_total(model, 1, 1000, "bf16", tp=8) == kv_bytes_total(model, 1, 1000, "bf16", tp=1)
    phi = catalog.model("qwen3-235b-a22b")  # 4 KV heads
    assert kv_bytes_total(phi, 1, 1000, "bf16", tp=8) == 2 * kv_bytes_total(phi, 1, 1000, "bf16", tp=1)


def test_mla_latent_is_replicated_on_every_gpu(catalog):
    model = catalog.model("deepseek-v3")
    assert kv_bytes_total(model, 1, 1000, "bf16", tp=8) == 8 * kv_bytes_total(model, 1, 1000, "bf16", tp=1)
    assert valid_splits(model) == [1, 2, 4, 8]


def test_a_plan_on_an_invalid_split_says_why_and_does_not_fit(catalog):
    plan = make_plan(
        PlanInput(
            model=catalog.model("qwen2.5-7b"), gpu=catalog.gpu("h100"), weights_format=catalog.format("bf16"), gpus=8
        )
    )
    assert not plan.fits and "28 attention heads" in plan.split_problem
    assert plan.warnings[0].startswith("invalid split")


def test_replication_warning_names_the_factor(catalog):
    plan = make_plan(
        PlanInput(
            model=catalog.model("qwen3-235b-a22b"),
            gpu=catalog.gpu("h200"),
            weights_format=catalog.format("fp8"),
            gpus=8,
        )
    )
    assert any("4 KV heads" in w and "2 times" in w for w in plan.warnings)

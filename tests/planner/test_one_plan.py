"""One plan per question: `plan --engine vllm`, a manual plan and its overlay answer from one path and
never contradict their own prediction."""

from __future__ import annotations

import itertools
import json

import pytest

from gpumem_tui.cli import build_parser, main
from gpumem_tui.cli.node_plan import manual_plan
from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.diagnosis.autoplan import engine_plans, plan_by_gpu
from gpumem_tui.planner.vllm import EngineSettings, predict

FULL_GRID = list(
    itertools.product(
        ["llama-3.1-8b", "llama-3.1-70b", "gemma-2-27b", "gpt-oss-120b"],
        ["l4", "a100", "h100"],
        ["bf16", "fp8", "int4"],
        [4096, 32768],
        [1, 2],
        [None, 2],
        ["auto", "fp8"],
    )
)
GRID = FULL_GRID[::7]  # every 7th: each model, GPU, format, length, stage count, split and KV dtype appears
USERS = 8
SPLITS = (1, 2, 4, 8)
METHODS = {"bf16": "none", "fp8": "fp8", "int4": "w4a16"}  # vLLM's --quantization for a format not shipped


def plan_json(capsys, *argv) -> dict:
    assert main(["plan", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def fits_by_hand(catalog, model, gpu, weights, context, kv_dtype, tp, pp, check_length=True) -> bool:
    """vLLM's own prediction, called directly: the launch starts and its pool holds USERS x context
    (`check_length`: the length held to the model's maximum, as vLLM holds a launch's)."""
    spec = catalog.model(model)
    shipped = spec.checkpoint_format or "bf16"
    settings = EngineSettings(
        model=spec,
        gpu=catalog.gpu(gpu),
        tp=tp,
        pp=pp,
        kv_cache_dtype=kv_dtype,
        quantization=None if weights == shipped else METHODS[weights],
        max_model_len=context,
        check_length=check_length,
    )
    prediction = predict(settings)
    return not prediction.failures and prediction.kv_cache_tokens >= USERS * context


@pytest.mark.parametrize("model, gpu, weights, context, pp, gpus, kv_dtype", GRID)
def test_the_verdict_is_vllms_own_prediction_on_tp_times_pp_gpus(
    capsys, catalog, model, gpu, weights, context, pp, gpus, kv_dtype
):
    argv = [
        "--model",
        model,
        "--gpu",
        gpu,
        "--weights",
        weights,
        "--context",
        str(context),
        "--users",
        str(USERS),
        "--engine",
        "vllm",
        "--pp",
        str(pp),
        "--kv-dtype",
        kv_dtype,
    ] + (["--gpus", str(gpus)] if gpus else [])
    plan = plan_json(capsys, *argv)
    if gpus is None:
        fewest = next(
            (tp for tp in SPLITS if fits_by_hand(catalog, model, gpu, weights, context, kv_dtype, tp, pp)), None
        )
        assert plan["fewest_gpus"] == (fewest * pp if fewest else None)
        # none fits (gemma-2-27b's 32768 is past its 8192, which vLLM refuses): the split memory needs
        memory = fewest or next(
            (tp for tp in SPLITS if fits_by_hand(catalog, model, gpu, weights, context, kv_dtype, tp, pp, False)),
            None,
        )
        assert plan["gpus"] == (memory or SPLITS[-1]) * pp
    else:
        assert plan["gpus"] == gpus
    tp = plan["gpus"] // pp
    assert plan["fits"] == fits_by_hand(catalog, model, gpu, weights, context, kv_dtype, tp, pp)
    assert plan["method"] == "vllm"
    assert main(["plan", *argv]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"tokens on {plan['gpus']} x " in out
    assert f"vLLM 0.33.0 on each of {plan['gpus']} GPU(s)" in out
    assert (f"Fits on {plan['gpus']} x " in out) == plan["fits"]
    assert f"on {plan['gpus']} GPU(s)" in out.split("Cross-check")[1] or "cannot split" in out


async def test_a_manual_plan_gets_the_split_and_pool_that_plan_prints(capsys, catalog):
    """The same options through `plan --engine vllm --json` and through the TUI's manual plan, drawn over
    the eight H200s of the idle node: the same split and the same KV pool."""
    options = [
        "--model",
        "llama-3.1-70b",
        "--weights",
        "fp8",
        "--kv-dtype",
        "fp8",
        "--context",
        "8192",
        "--users",
        "80",
    ]
    plan = plan_json(capsys, *options, "--gpu", "h200", "--engine", "vllm")
    assert plan["gpus"] == 2  # 80 conversations do not fit on one H200
    manual = manual_plan(build_parser().parse_args(options), catalog)
    feed = DemoFeed("idle-node", ManualClock(60))
    try:
        sample = await feed.sample()
    finally:
        await feed.aclose()
    plans = engine_plans(sample, catalog, manual)
    assert len(plans) == 1 and plans[0].settings.tp == plan["gpus"]
    assert sorted(plan_by_gpu(plans)) == [0, 1]
    assert plans[0].prediction.kv_cache_bytes == plan["engine"]["kv_cache_bytes"]
    assert plans[0].prediction.kv_cache_tokens == plan["kv_pool_tokens"]

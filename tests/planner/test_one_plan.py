"""One plan per question: `plan --engine vllm`, a manual plan and its overlay answer from one path and
never contradict their own prediction."""

from __future__ import annotations

import itertools
import json

import pytest

from gpumem_tui.autoplan import engine_plans, plan_by_gpu
from gpumem_tui.cli import build_parser, main
from gpumem_tui.cli.planargs import manual_plan
from gpumem_tui.sources.feed import DemoFeed
from gpumem_tui.sources.mock import ManualClock

GRID = list(itertools.product(["llama-3.1-8b", "llama-3.1-70b", "gemma-2-27b", "gpt-oss-120b"],
                              ["l4", "a100", "h100"], ["bf16", "fp8", "int4"], [4096, 32768]))
USERS = 8


def plan_json(capsys, *argv) -> dict:
    assert main(["plan", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("model, gpu, weights, context", GRID)
def test_the_verdict_never_contradicts_the_engines_own_prediction(capsys, model, gpu, weights, context):
    argv = ["--model", model, "--gpu", gpu, "--weights", weights, "--context", str(context), "--users", str(USERS),
            "--engine", "vllm"]
    plan = plan_json(capsys, *argv)
    engine = plan["engine"]
    starts = not engine["failures"]
    assert plan["fits"] == (starts and engine["kv_cache_tokens"] >= USERS * context)
    assert plan["method"] == "vllm"
    assert engine["max_model_len"] == context
    if plan["fewest_gpus"] is not None:
        assert plan["gpus"] == plan["fewest_gpus"]
    assert main(["plan", *argv]) == 0
    out = capsys.readouterr().out
    assert ("Fits on" in out) == plan["fits"]
    assert ("Does not start" in out) == (not starts)
    assert f"vLLM 0.33.0 on each of {plan['gpus']} GPU(s)" in out


async def test_a_manual_plan_gets_the_split_and_pool_that_plan_prints(capsys, catalog):
    """The same options through `plan --engine vllm --json` and through the TUI's manual plan, drawn over
    the eight H200s of the idle node: the same split and the same KV pool."""
    options = ["--model", "llama-3.1-70b", "--weights", "fp8", "--kv-dtype", "fp8", "--context", "8192",
               "--users", "80"]
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

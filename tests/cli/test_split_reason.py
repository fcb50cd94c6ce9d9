"""`plan` asked without a split says why it planned for more than one GPU; asked with one, it answers for it."""

from __future__ import annotations

import json

from gpumem_tui.cli import main
from gpumem_tui.units import fmt

ASK = ["plan", "--model", "llama-3.1-8b", "--gpu", "l4", "--users", "8"]


def run(capsys, *args) -> str:
    assert main([*ASK, *args]) == 0
    return capsys.readouterr().out


def test_asked_for_one_gpu_it_answers_for_one(capsys):
    one = json.loads(run(capsys, "--gpus", "1", "--json"))
    assert one["gpus"] == 1 and not one["fits"] and one["split_reason"] is None
    assert " on 1 x L4 " in run(capsys, "--gpus", "1")


def test_a_split_grown_past_one_gpu_says_what_one_lacks(capsys):
    one = json.loads(run(capsys, "--gpus", "1", "--json"))
    bands = {b["name"]: b["bytes"] for b in one["per_gpu"]["bands"]}
    needs = bands["weights"] + bands["kv_cache"] + bands["overhead"]
    has = one["per_gpu"]["capacity_bytes"] - bands["reserved_by_utilization"]
    said = f"1 x L4 is too small (needs {fmt(needs)}, has {fmt(has)} per GPU at 90% utilization): 2 x L4"
    grown = json.loads(run(capsys, "--json"))
    assert grown["gpus"] == 2 and grown["split_reason"] == said
    assert said in run(capsys).splitlines()[2]


def test_by_the_engine_it_says_what_its_pool_lacks_on_one(capsys):
    one = json.loads(run(capsys, "--gpus", "1", "--engine", "vllm", "--json"))
    said = (
        f"1 x L4 is too small by vLLM {one['engine']['version']}'s own sizing (needs 65,536 tokens of KV cache, "
        f"its pool holds {one['kv_pool_tokens']:,}): 2 x L4"
    )
    assert json.loads(run(capsys, "--engine", "vllm", "--json"))["split_reason"] == said


def test_nothing_is_said_when_one_gpu_is_enough_or_nothing_fits(capsys):
    assert json.loads(run(capsys, "--users", "1", "--gpu", "h100", "--json"))["split_reason"] is None
    assert main(["plan", "--model", "llama-3.1-405b", "--gpu", "l4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["split_reason"] is None

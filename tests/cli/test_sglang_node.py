"""The `sglang-node` demo: an SGLang engine whose pool follows SGLang's own rule, read over real HTTP with the
settings it states; `check` names SGLang's flags, never vLLM's, and its plan is never vLLM's arithmetic."""

from __future__ import annotations

import json

from gpumem_tui.catalog import load_catalog
from gpumem_tui.cli import main
from gpumem_tui.demo import load_scenario
from gpumem_tui.demo.clock import ManualClock
from gpumem_tui.demo.node import SimulatedNode
from gpumem_tui.diagnosis.sglang_plan import UNSIZED
from gpumem_tui.planner.kv import layer_bytes_per_token
from gpumem_tui.planner.weights import weights_bytes_per_gpu
from gpumem_tui.units import GIB, MIB

VLLM_FLAGS = ("--gpu-memory-utilization", "--max-num-seqs", "--max-model-len")


def _json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_the_pool_is_sglang_s_formula_over_the_card() -> None:
    """int((avail - total x (1 - mem_fraction_static)) // cell), total and avail as SGLang measures them."""
    scenario = load_scenario("sglang-node")
    spec, [group] = scenario.engines[0], scenario.gpus
    catalog = load_catalog()
    model, card = catalog.model(spec.model), catalog.gpu(group.model)
    cell = model.layers * layer_bytes_per_token(model, "auto", 1)
    assert cell == 32 * 8 * 128 * 2 * 2
    total = card.capacity_bytes - group.reserved_mib * MIB - round(0.35 * GIB)  # after the CUDA context
    avail = total - weights_bytes_per_gpu(model, catalog.format("bf16"), 1)
    expected = int((avail - total * (1 - spec.mem_fraction_static)) // cell)
    node = SimulatedNode(scenario, clock=ManualClock(scenario.story_s))
    state = node.engine_state(spec.id)
    assert state.kv_pool_tokens == expected
    assert 400_000 < expected < 430_000  # about 416 k: 444.5 k at 0.88 in SGLang's own logs (reference)
    assert state.kv_cache_bytes_per_gpu == (expected + 1) * cell  # one page more: slot 0 pads
    assert state.sglang is not None and state.sglang["max_running_requests"] == 2049


def test_snapshot_carries_what_the_server_states(capsys) -> None:
    code, snapshot = _json(capsys, "snapshot", "--demo", "sglang-node", "--json")
    [engine] = snapshot["engines"]
    [record] = engine["records"]
    settings = record["sglang"]
    assert (code, record["engine"], engine["url"]) == (0, "sglang", "http://127.0.0.1:30000")
    assert settings["mem_fraction_static"] == 0.835 and settings["max_total_num_tokens"] == record["kv_pool_tokens"]
    assert settings["context_length"] == record["max_model_len"] == 131072
    assert settings["notes"] == []


def test_check_names_sglang_s_flags_and_never_plans_by_vllm_s_rules(capsys) -> None:
    code, report = _json(capsys, "check", "--demo", "sglang-node", "--json")
    [saturated] = [f for f in report["findings"] if f["code"] == "kv_saturated"]
    assert code == 1
    assert "--max-running-requests" in saturated["try_this"] and "fp8_e4m3" in saturated["try_this"]
    for finding in report["findings"]:
        assert not any(flag in finding["try_this"] for flag in VLLM_FLAGS), finding
    main(["check", "--demo", "sglang-node", "-v"])
    text = capsys.readouterr().out
    assert "no prediction: " + UNSIZED[:60] in " ".join(text.split())
    assert "mem_fraction_static 0.835 (from /get_server_info)" in text
    assert "vLLM 0." not in text


def test_a_plan_set_by_hand_is_not_applied_by_vllm_s_rules(capsys) -> None:
    main(["check", "--demo", "sglang-node", "--model", "llama-3.1-8b", "-v"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the plan set by hand is sized by vLLM's rules, so it is not applied to this SGLang engine" in text
    assert "manual plan" not in text and "vLLM 0." not in text

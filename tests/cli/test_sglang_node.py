"""The `sglang-node` demo: an SGLang engine whose pool follows SGLang's own rule, read over real HTTP with the
settings it states; `check` plans it by SGLang's rules (the same as `plan --engine sglang` with its settings),
names SGLang's flags, never vLLM's, and holds its measured pool against the plan's."""

from __future__ import annotations

import json

from gpumem_tui.catalog import load_catalog
from gpumem_tui.cli import main
from gpumem_tui.demo import load_scenario
from gpumem_tui.demo.clock import ManualClock
from gpumem_tui.demo.node import SimulatedNode
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
    # 0.5.6's request table has max_num_reqs rows (2048 at this pool and context), so half the pool is capped there
    assert state.sglang is not None and state.sglang["max_running_requests"] == 2048


def test_snapshot_carries_what_the_server_states(capsys) -> None:
    code, snapshot = _json(capsys, "snapshot", "--demo", "sglang-node", "--json")
    [engine] = snapshot["engines"]
    [record] = engine["records"]
    settings = record["sglang"]
    assert (code, record["engine"], engine["url"]) == (0, "sglang", "http://127.0.0.1:30000")
    assert settings["mem_fraction_static"] == 0.835 and settings["max_total_num_tokens"] == record["kv_pool_tokens"]
    assert settings["context_length"] == record["max_model_len"] == 131072
    assert settings["notes"] == []


def test_check_names_sglang_s_flags_and_plans_by_sglang_s_rules(capsys) -> None:
    code, report = _json(capsys, "check", "--demo", "sglang-node", "--json")
    [saturated] = [f for f in report["findings"] if f["code"] == "kv_saturated"]
    assert code == 1
    assert "--max-running-requests" in saturated["try_this"] and "fp8_e4m3" in saturated["try_this"]
    for finding in report["findings"]:
        assert not any(flag in finding["try_this"] for flag in VLLM_FLAGS), finding
    main(["check", "--demo", "sglang-node", "-v"])
    text = capsys.readouterr().out
    assert "no prediction" not in text
    assert "mem_fraction_static 0.835 (from /get_server_info)" in text
    assert "sglang:  KV pool 416,502 tokens" in text
    assert "vLLM 0." not in text


def _plan_tokens(capsys, *settings: str) -> int:
    code, plan = _json(capsys, "plan", "--engine", "sglang", "--model", MODEL, "--gpu", "h100", *settings, "--json")
    assert code == 0
    return plan["engine"]["kv_cache_tokens"]


MODEL = "meta-llama/Llama-3.1-8B-Instruct"
SETTINGS = ("--mem-fraction-static", "0.835", "--chunked-prefill-size", "8192", "--cuda-graph-max-bs", "256")


def test_the_running_engine_is_planned_as_plan_engine_sglang_plans_it(capsys) -> None:
    """One answer: the running engine's plan and `plan --engine sglang` with the settings it states give one pool,
    within 0.1 % of the pool the engine carved (they differ only by the weights the planner predicts)."""
    code, report = _json(capsys, "check", "--demo", "sglang-node", "--json")
    [plan] = report["plans"]
    code, snapshot = _json(capsys, "snapshot", "--demo", "sglang-node", "--json")
    measured = snapshot["engines"][0]["records"][0]["kv_pool_tokens"]
    planned = _plan_tokens(capsys, *SETTINGS, "--context", "131072")
    assert plan["kv_cache_tokens"] == plan["sglang"]["kv_cache_tokens"] == planned
    assert plan["sglang"]["mem_fraction_static"] == 0.835 and plan["sglang"]["fraction_given"]
    assert plan["terms"] == {} and plan["max_model_len"] == 131072
    assert abs(planned - measured) / measured < 0.001, (planned, measured)
    assert planned == _plan_tokens(capsys)  # 0.835 and its flags are what 0.5.6 picks on an H100 by itself
    assert not [f for f in report["findings"] if f["code"] in ("kv_pool_short", "weights_mismatch", "plan_note")]


def test_the_plan_bar_is_sglang_s_bands_over_the_card() -> None:
    """The overlay: outside the fraction, weights and KV pool inside it, the request table, workspace, graphs and
    activations in what it leaves, summing to the card; the process's own bands near what NVML says it holds."""
    from gpumem_tui.cli.check_sources import from_demo
    from gpumem_tui.diagnosis.autoplan import plan_by_gpu
    from gpumem_tui.diagnosis.findings.records import Thresholds

    checked = from_demo("sglang-node", None, None, load_catalog(), None, Thresholds())
    [plan] = checked.plans
    overlay, p = plan_by_gpu(checked.plans)[0], plan.sglang
    assert p is not None and plan.prediction is None and plan.settings is None
    names = [band.name for band in overlay.bands]
    assert names == [
        "driver reserved",
        "CUDA context",
        "weights",
        "KV pool",
        "request table",
        "backend workspace",
        "CUDA graphs",
        "activations",
        "left by mem_fraction_static",
        "spare",
    ]
    sizes = {band.name: band.bytes for band in overlay.bands}
    [card] = checked.sample.gpus
    assert sum(sizes.values()) == overlay.capacity_bytes == card.memory_total_bytes
    assert sizes["spare"] == 0 and sizes["left by mem_fraction_static"] == p.left_after_graphs_bytes > 0
    assert sizes["KV pool"] == p.kv_cache_bytes == (p.kv_cache_tokens + 1) * 131_072
    kept = p.total_bytes * p.mem_fraction_static  # what the fraction keeps, the pool's padding slot beyond it
    assert kept - p.cell_bytes < sizes["weights"] + sizes["KV pool"] - p.cell_bytes <= kept
    assert overlay.kv_pool_tokens == p.kv_cache_tokens and overlay.measured_kv_bytes_per_token == 131_072
    held = sum(x.gpu_memory_bytes or 0 for x in checked.sample.processes if x.gpu_index == 0)
    assert abs(overlay.engine_bytes - held) / held < 0.05, (overlay.engine_bytes, held)


NEIGHBOUR = """
[[processes]]
id = "notebook"
name = "python3"
cmdline = ["/opt/conda/bin/python3", "-m", "ipykernel_launcher"]
user = "ana"
gpus = [0]
memory_gib = 16
start_s = 0
ramp_s = 0
"""


def test_a_pool_short_of_the_plan_is_a_finding_in_sglang_s_flags(capsys, tmp_path) -> None:
    """A notebook holds 16 GiB when SGLang measures free memory: it carves about 16 x 0.835 GiB less than the
    plan (made from the card) says, and `kv_pool_short` says so in SGLang's flags."""
    from gpumem_tui.demo.scenario import scenario_dir

    text = (scenario_dir() / "sglang-node.toml").read_text(encoding="utf-8")
    path = tmp_path / "sglang-neighbour.toml"
    path.write_text(text.replace("[[events]]", NEIGHBOUR + "\n[[events]]", 1), encoding="utf-8")
    code, report = _json(capsys, "check", "--demo", str(path), "--json")
    [plan] = report["plans"]
    [short] = [f for f in report["findings"] if f["code"] == "kv_pool_short"]
    code, snapshot = _json(capsys, "snapshot", "--demo", str(path), "--json")
    measured = snapshot["engines"][0]["records"][0]["kv_pool_tokens"]
    fewer = plan["kv_cache_tokens"] - measured
    assert abs(fewer - 16 * GIB * 0.835 / 131_072) < 0.01 * fewer, fewer
    assert f"{measured:,} tokens, {plan['kv_cache_tokens']:,} planned" in short["title"]
    assert "--mem-fraction-static (or a --max-total-tokens cap)" in short["try_this"]
    assert not any(flag in short["try_this"] for flag in VLLM_FLAGS)


def test_a_plan_set_by_hand_is_sized_by_sglang_s_rules(capsys) -> None:
    """--model on the node: the hand-set model, weights and KV cache with the engine's stated settings, sized as
    `plan --engine sglang` sizes the same; another weight format and KV cache is a plan_mismatch."""
    code, report = _json(capsys, "check", "--demo", "sglang-node", "--model", "llama-3.1-8b", "--json")
    [plan] = report["plans"]
    assert plan["label"] == "manual" and plan["kv_cache_tokens"] == _plan_tokens(
        capsys, *SETTINGS, "--context", "131072"
    )
    assert not [f for f in report["findings"] if f["code"] in ("plan_mismatch", "kv_pool_short")]
    code, report = _json(
        capsys,
        "check",
        "--demo",
        "sglang-node",
        "--model",
        "llama-3.1-8b",
        "--weights",
        "fp8",
        "--kv-dtype",
        "fp8",
        "--json",
    )
    [plan] = report["plans"]
    fp8 = _plan_tokens(capsys, *SETTINGS, "--context", "131072", "--weights", "fp8", "--kv-dtype", "fp8")
    assert plan["kv_cache_tokens"] == fp8 > 2 * 416_502
    [mismatch] = [f for f in report["findings"] if f["code"] == "plan_mismatch"]
    assert "weight format and KV cache dtype differ" in mismatch["title"]
    main(["check", "--demo", "sglang-node", "--model", "llama-3.1-8b", "-v"])
    text = " ".join(capsys.readouterr().out.split())
    assert "manual plan for http://127.0.0.1:30000" in text and "vLLM 0." not in text

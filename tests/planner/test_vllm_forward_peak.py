"""The forward pass's peak in vLLM's profile run (issue 15): where a small vocabulary makes the dummy forward
pass, not the sampler, the profile's peak. Pinned on a hand-made shape and on the v0.19 H100 logs whose
peak it is (CodeLlama 7B, Granite 3.1 and 3.3 8B)."""

import json

import pytest

from gpumem_tui.cli import main
from gpumem_tui.planner.vllm import EngineSettings, predict
from gpumem_tui.planner.vllm.forward import ASSUMED_L2_BYTES, autotune_buffer_bytes, forward_peak_bytes
from gpumem_tui.planner.vllm.profile import forward_bytes
from gpumem_tui.planner.vllm.records import term_line
from gpumem_tui.planner.vllm.sampler import CUBLAS_WORKSPACE_HOPPER
from gpumem_tui.planner.vllm.versions import rules_for
from gpumem_tui.units import GIB, MIB
from tests.planner.test_vllm_sampler_peak import _v019_h100_cases

FORWARD_PEAK_CASES = {
    "codellama/CodeLlama-7b-hf": 0.77,
    "ibm-granite/granite-3.1-8b-instruct": 0.85,
    "ibm-granite/granite-3.3-8b-instruct": 0.85,
}


def _settings(catalog, model="codellama-7b", gpu="h100", **kw):
    kw.setdefault("version", "0.19.0")
    kw.setdefault("max_model_len", 8192)
    return EngineSettings(model=catalog.model(model), gpu=catalog.gpu(gpu), **kw)


def test_the_parts_on_a_hand_made_shape(catalog):
    """The MLP's widest moment (3 x I + 3 x H per token), the 32 MiB cuBLAS workspace of the first matmul,
    and Inductor's L2-sized flush buffer (50 MiB on H100) while it autotunes a kernel."""
    spec = catalog.model("codellama-7b").model_copy(update={"hidden_size": 1000, "intermediate_size": 3000})
    gpu = catalog.gpu("h100")
    got = forward_peak_bytes(rules_for("0.19.0"), spec, gpu, 512, 2, 1, compiled=True)
    assert got == 512 * 2 * (3 * 3000 + 3 * 1000) + 32 * MIB + 50 * MIB
    assert autotune_buffer_bytes(gpu) == 50 * MIB
    assert CUBLAS_WORKSPACE_HOPPER == 32 * MIB


def test_eager_and_old_releases_keep_todays_forward(catalog):
    """With --enforce-eager nothing is compiled, so nothing is autotuned; before 0.17 not read."""
    spec, gpu = catalog.model("codellama-7b"), catalog.gpu("h100")
    plain = forward_bytes(spec, 8192, 2, 1)
    assert forward_peak_bytes(rules_for("0.19.0"), spec, gpu, 8192, 2, 1, compiled=False) == plain
    assert forward_peak_bytes(rules_for("0.16.0"), spec, gpu, 8192, 2, 1, compiled=True) == plain


def test_the_v019_h100_logs_whose_peak_is_the_forward_pass(catalog):
    """Each rounds to what its log prints, within half a hundredth, and says the term."""
    checked = {}
    for case, settings in _v019_h100_cases(catalog):
        if case["model"] not in FORWARD_PEAK_CASES:
            continue
        p = predict(settings)
        checked[case["model"]] = round(p.activation_peak_bytes / GIB, 3)
        assert p.activation_peak_bytes / GIB == pytest.approx(case["activation_peak_gib"], abs=0.006), checked
        assert p.terms["forward_peak"] == p.activation_peak_bytes
        assert "sampler_peak" not in p.terms
    assert set(checked) == set(FORWARD_PEAK_CASES)


def test_an_unknown_l2_size_is_said_as_assumed(catalog):
    p = predict(_settings(catalog, gpu="l4"))
    assert any("L2" in note and "assumed" in note for note in p.assumed)
    assert not any("L2" in note for note in predict(_settings(catalog)).assumed)
    assert autotune_buffer_bytes(catalog.gpu("l4")) == ASSUMED_L2_BYTES


def test_plan_prints_and_carries_the_term(capsys):
    """CodeLlama's 32k vocabulary: `plan --engine vllm` names the forward peak, in words and in JSON."""
    args = ["plan", "--model", "codellama-7b", "--gpu", "h100", "--engine", "vllm", "--vllm-version", "0.19.0"]
    assert main([*args, "--max-model-len", "8192", "--json"]) == 0
    engine = json.loads(capsys.readouterr().out)["engine"]
    assert engine["terms"]["forward_peak"] == engine["activation_peak_bytes"]
    assert main([*args, "--max-model-len", "8192"]) == 0
    assert f"  + {term_line('forward_peak', engine['terms']['forward_peak'])}" in capsys.readouterr().out
    assert term_line("forward_peak", GIB) == "forward peak: 1.00 GiB"

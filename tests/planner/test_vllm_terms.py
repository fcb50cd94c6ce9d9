"""The named sizing terms a prediction applied: the same figures in `plan --engine vllm`, its JSON
(`engine.terms`) and `log --compare`."""

import json

from gpumem_tui.cli import main
from gpumem_tui.planner.vllm import EngineSettings, predict
from gpumem_tui.planner.vllm.records import term_line
from gpumem_tui.units import GIB


def test_a_term_that_decides_the_peak_is_named_with_its_bytes(catalog):
    """Gemma 2's 256k vocabulary makes the sampler phase the activation peak: the term says so."""
    p = predict(EngineSettings(model=catalog.model("google/gemma-2-9b"), gpu=catalog.gpu("h100"), version="0.19.0"))
    assert p.terms["sampler_peak"] == p.activation_peak_bytes
    assert p.term_lines()[0] == f"sampler peak: {p.activation_peak_bytes / GIB:,.2f} GiB"


def test_plan_prints_and_carries_the_terms(capsys):
    args = ["plan", "--model", "google/gemma-2-9b", "--gpu", "h100", "--engine", "vllm", "--vllm-version", "0.19.0"]
    assert main([*args, "--json"]) == 0
    engine = json.loads(capsys.readouterr().out)["engine"]
    assert engine["terms"]["sampler_peak"] == engine["activation_peak_bytes"]
    assert main(args) == 0
    assert f"  + {term_line('sampler_peak', engine['terms']['sampler_peak'])}" in capsys.readouterr().out

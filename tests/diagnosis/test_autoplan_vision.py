"""The live auto plan of a multimodal engine (issue 15, term 3): the same vision terms as `plan --engine
vllm`, with `--limit-mm-per-prompt` read from the engine's command line in each spelling vLLM takes."""

from __future__ import annotations

import pytest

from gpumem_tui.diagnosis.autoplan import engine_plans

from .build import engine, gpu, process, sample

GEMMA = "google/gemma-3-12b-it"
SERVE = ["vllm", "serve", GEMMA, "--max-model-len", "8192"]


def _plan(catalog, *flags: str):
    procs = [process(2100, 30, cmdline=[*SERVE, *flags])]
    [plan] = engine_plans(sample(gpus=[gpu(used_gib=30)], processes=procs, engines=[engine(state="down")]), catalog)
    return plan


def test_a_multimodal_engine_is_judged_with_its_tower(catalog):
    plan = _plan(catalog)
    assert plan.prediction.terms["vision_tower"] == 421_290_864 * 2 and "encoder_profile" in plan.prediction.terms


@pytest.mark.parametrize(
    "flags",
    [
        ["--limit-mm-per-prompt", '{"image": 0}'],
        ['--limit-mm-per-prompt={"image": {"count": 0}}'],
        ["--limit-mm-per-prompt.image", "0"],
        ["--language-model-only"],
    ],
)
def test_no_images_on_the_command_line_means_no_tower(catalog, flags):
    plan = _plan(catalog, *flags)
    assert "vision_tower" not in plan.prediction.terms and "encoder_profile" not in plan.prediction.terms
    assert any("limit_mm_per_prompt" in f and "command line" in f for f in plan.found)


def test_an_unreadable_limit_is_said_and_the_default_kept(catalog):
    plan = _plan(catalog, "--limit-mm-per-prompt", "{image")
    assert "vision_tower" in plan.prediction.terms
    assert any("--limit-mm-per-prompt" in a and "999" in a for a in plan.assumed)

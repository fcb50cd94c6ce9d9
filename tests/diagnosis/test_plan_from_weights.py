"""A plan made from a weight name is one plan wherever it is made: `--weights` on the command line, the
planner screen's format (tests/app/test_planner_screen.py) and a scenario's `planned_format`."""

from __future__ import annotations

import pytest

from gpumem_tui.catalog import load_catalog
from gpumem_tui.cli import build_parser
from gpumem_tui.cli.node_plan import manual_plan
from gpumem_tui.demo import load_scenario
from gpumem_tui.demo.plan import scenario_plan

MODELS = ["meta-llama/Llama-3.1-70B", "openai/gpt-oss-20b"]  # a 16-bit checkpoint and an MXFP4 one
NAMES = [*sorted(load_catalog().formats), "awq", "gptq", "w8a8", "w4a16"]  # formats, then vLLM methods


def _from_cli(catalog, model: str, weights: str):
    return manual_plan(build_parser().parse_args(["--model", model, "--weights", weights]), catalog)


def _from_scenario(catalog, model: str, weights: str):
    scenario = load_scenario("wrong-precision")
    engine = scenario.engines[0].model_copy(update={"model": model, "planned_format": weights})
    return scenario_plan(scenario.model_copy(update={"engines": [engine]}), catalog)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("weights", NAMES)
def test_a_scenario_plans_its_weights_as_the_command_line_does(catalog, model, weights):
    cli, demo = _from_cli(catalog, model, weights), _from_scenario(catalog, model, weights)
    assert demo is not None and cli is not None
    assert demo.model == cli.model and demo.quantization == cli.quantization

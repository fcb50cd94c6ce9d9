"""The dense text models of the llm-d v0.19.0 sweep: each catalog entry's weights, as vLLM loads them, are
what every real startup of that model logged ("Model loading took X GiB"), within 1 %; and where a count is
published it is the count the entry's shapes give."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.planner.params import count_params
from gpumem_tui.planner.vllm.loaded import dtype_bytes, loaded_weight_bytes, quantization_of
from gpumem_tui.units import GIB
from tests.datafiles import CALIBRATION, LLMD_SWEEP

MODELS = (
    "codellama/CodeLlama-7b-hf",
    "ibm-granite/granite-3.1-2b-instruct",
    "ibm-granite/granite-3.1-8b-instruct",
    "ibm-granite/granite-3.3-8b-instruct",
    "google/gemma-7b",
    "google/gemma-2-2b-it",
    "Qwen/Qwen3-14B",
    "microsoft/phi-4",
    "moonshotai/Kimi-Dev-72B",
)
"""The sweep's dense text models the catalog lacked (phi-2 is left out: its MLP has two matrices, not the
three of a gated MLP the catalog's shapes count)."""


def _startups(model: str) -> list[dict]:
    cases = json.loads(CALIBRATION.read_text(encoding="utf-8")) + json.loads(LLMD_SWEEP.read_text(encoding="utf-8"))
    short = model.split("/")[-1].lower()
    return [c for c in cases if (c.get("model") or "").split("/")[-1].lower() == short and c.get("weights_gib")]


@pytest.mark.parametrize("model", MODELS)
def test_weights_are_what_every_startup_of_the_model_logged(catalog, model):
    spec = catalog.model(model)
    startups = _startups(model)
    assert startups, model
    for case in startups:
        tp = case["tensor_parallel_size"] or 1
        width = dtype_bytes((case["dtype"] or "auto").removeprefix("torch."))
        predicted = loaded_weight_bytes(spec, width, quantization_of(case["quantization"], spec), tp) / GIB
        assert predicted == pytest.approx(case["weights_gib"], rel=0.01), (model, tp, predicted)


@pytest.mark.parametrize("model", MODELS)
def test_a_published_count_is_the_count_of_the_shapes(catalog, model):
    spec = catalog.model(model)
    if spec.params_total_published is not None:
        assert count_params(spec).total == spec.params_total_published
    assert spec.sources and spec.notes

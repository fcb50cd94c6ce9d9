"""How a start ended, predicted against what the log shows: the log wins, and the words say whose fault."""

import pytest

from gpumem_tui.planner.vllm import predict
from gpumem_tui.planner.vllm.from_log import Stated, settings_from
from gpumem_tui.planner.vllm.outcome import outcome
from gpumem_tui.planner.vllm.risks import OOM_AT_START

KV_TOO_SMALL = {"kind": "kv_cache_too_small", "message": "no memory is left for the KV cache"}
NODE = {"kind": "free_memory_below_requested", "message": "free memory at startup (60.87 of 79.19 GiB) is below"}


@pytest.fixture(scope="module")
def starts(catalog):
    stated = Stated(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", max_model_len=8192)
    prediction = predict(settings_from(catalog, stated, "0.19.0"))
    assert prediction.failures == [] and not any(OOM_AT_START in w for w in prediction.warnings)
    return prediction


@pytest.fixture(scope="module")
def fails(starts):
    warning = f"the sampler warm-up needs 4.09 GiB, but utilization 0.95 leaves 3.96 GiB: {OOM_AT_START}; lower it"
    return starts.model_copy(update={"warnings": [warning]})


def test_a_predicted_failure_on_a_log_that_started_is_the_predictions_fault(fails):
    ending = outcome(fails, {"startup_complete": True, "failures": []}, "llama")
    assert (ending.log, ending.predicted, ending.agree) == ("started", "fails", False)
    assert "wrong for llama" in ending.says and "not the node" in ending.says
    assert OOM_AT_START not in ending.says and "lower it" not in ending.says
    assert "leaves 3.96 GiB" in ending.says


def test_a_failed_log_predicted_to_start_disagrees(starts):
    ending = outcome(starts, {"startup_complete": False, "failures": [KV_TOO_SMALL]}, "llama")
    assert (ending.log, ending.agree) == ("failed", False) and "expected a clean start" in ending.says


def test_a_start_the_node_stopped_is_neither_agreement_nor_disagreement(starts):
    ending = outcome(starts, {"startup_complete": False, "failures": [NODE]}, "llama")
    assert (ending.log, ending.agree) == ("failed", None) and "stopped by the node" in ending.says


def test_agreement_and_silence(starts, fails):
    assert outcome(starts, {"startup_complete": True, "failures": []}, "llama").agree is True
    assert outcome(fails, {"startup_complete": False, "failures": [KV_TOO_SMALL]}, "llama").agree is True
    silent = outcome(fails, {"startup_complete": False, "failures": []}, "llama")
    assert (silent.log, silent.agree) == ("not shown", None) and OOM_AT_START in silent.says

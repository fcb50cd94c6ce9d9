"""Model names as people type them and engines report them (issue 26, point 5): the -Instruct, -chat and -it
ids of the catalog's models plan as the catalog's entry, an unknown id gets its nearest names, and the node's
plan made from what runs finds the same entry the CLI does."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.catalog import load_catalog
from gpumem_tui.cli import main
from gpumem_tui.diagnosis.autoplan import engine_plans
from tests.diagnosis.build import ENGINE_CMD, engine, gpu, process, sample

# Every catalog model that has an instruct, chat or -it repository of its own architecture and no entry of
# its own for it: the id vLLM logs and /v1/models reports, and the entry it plans as.
TUNED = {
    "meta-llama/Llama-3.1-70B-Instruct": "meta-llama/Llama-3.1-70B",
    "meta-llama/Llama-3.1-405B-Instruct": "meta-llama/Llama-3.1-405B",
    "meta-llama/Meta-Llama-3.1-70B-Instruct": "meta-llama/Llama-3.1-70B",
    "meta-llama/Meta-Llama-3-8B-Instruct": "meta-llama/Meta-Llama-3-8B",
    "meta-llama/Meta-Llama-3-70B-Instruct": "meta-llama/Meta-Llama-3-70B",
    "meta-llama/Llama-3.2-1B-Instruct": "meta-llama/Llama-3.2-1B",
    "meta-llama/Llama-3.2-3B-Instruct": "meta-llama/Llama-3.2-3B",
    "meta-llama/Llama-2-7b-chat-hf": "meta-llama/Llama-2-7b-hf",
    "meta-llama/Llama-2-70b-chat-hf": "meta-llama/Llama-2-70b-hf",
    "mistralai/Mistral-7B-Instruct-v0.1": "mistralai/Mistral-7B-v0.1",
    "codellama/CodeLlama-7b-Instruct-hf": "codellama/CodeLlama-7b-hf",
    "google/gemma-7b-it": "google/gemma-7b",
    "google/gemma-2-2b-it": "google/gemma-2-2b",
    "google/gemma-2-9b-it": "google/gemma-2-9b",
    "google/gemma-2-27b-it": "google/gemma-2-27b",
}


def _plan(capsys, model: str) -> tuple[int, dict | str]:
    code = main(["plan", "--model", model, "--gpu", "h200", "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else err


@pytest.mark.parametrize("served, entry", sorted(TUNED.items()))
def test_an_instruct_id_plans_as_its_catalog_model(capsys, served, entry):
    code, plan = _plan(capsys, served)
    assert code == 0, plan
    assert isinstance(plan, dict) and plan["model"] == entry
    assert f"{served}: the architecture of {entry} (the same config.json dimensions)" in plan["warnings"]


def test_every_repository_alias_of_the_catalog_plans_as_its_entry(capsys):
    catalog = load_catalog()
    aliases = {alias.id: spec.id for spec in catalog.models.values() for alias in spec.repo_aliases}
    assert set(TUNED) <= set(aliases)
    for served, entry in aliases.items():
        code, plan = _plan(capsys, served)
        assert code == 0 and isinstance(plan, dict) and plan["model"] == entry, (served, plan)


def test_a_quantized_copy_plans_as_its_model_in_its_format(capsys):
    code, plan = _plan(capsys, "RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8")
    assert code == 0 and isinstance(plan, dict)
    assert plan["model"] == "RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8" and plan["weights_format"] == "fp8"
    assert plan["params_total"] == 70553706496  # meta-llama/Llama-3.1-70B's architecture


def test_an_unknown_id_names_the_nearest_by_its_own_name(capsys):
    """A tune under another name is matched by its last part too: Llama 3.1 70B comes first."""
    code, err = _plan(capsys, "NousResearch/Hermes-3-Llama-3.1-70B")
    assert code == 2 and isinstance(err, str) and err.count("\n") == 1
    assert "unknown model 'NousResearch/Hermes-3-Llama-3.1-70B'; closest: meta-llama/Llama-3.1-70B," in err


def test_an_unknown_id_with_nothing_near_says_where_the_names_are(capsys):
    code, err = _plan(capsys, "acme/zzz")
    assert code == 2 and isinstance(err, str) and err.count("\n") == 1
    assert "unknown model 'acme/zzz': none in the catalog is close (`gpumem-tui catalog` lists them" in err


def test_fit_takes_the_same_names(capsys):
    assert main(["fit", "--models", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "h100", "--json"]) == 0
    assert {cell["model"] for cell in json.loads(capsys.readouterr().out)} == {"meta-llama/Llama-3.1-70B"}


def _served(name: str):
    """A node whose one engine serves `name` (as its /metrics and /v1/models say) on an 80 GB card."""
    return sample(
        gpus=[gpu(used_gib=72)], processes=[process(2100, 72, cmdline=ENGINE_CMD)], engines=[engine(model=name)]
    )


def test_the_node_plans_a_served_instruct_id_as_its_catalog_model():
    [plan] = engine_plans(_served("meta-llama/Llama-3.2-3B-Instruct"), load_catalog())
    assert plan.model == "meta-llama/Llama-3.2-3B" and plan.prediction is not None and plan.missing is None
    assert "architecture from the catalog (meta-llama/Llama-3.2-3B-Instruct: the architecture of" in "".join(plan.found)


def test_the_node_names_the_nearest_for_a_served_model_it_does_not_know():
    [plan] = engine_plans(_served("NousResearch/Hermes-3-Llama-3.1-70B"), load_catalog())
    assert plan.prediction is None and plan.missing is not None
    assert "(unknown model); closest: meta-llama/Llama-3.1-70B," in plan.missing

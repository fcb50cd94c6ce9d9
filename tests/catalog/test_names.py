"""The catalog's names: each claimed by one entry, each repository alias with its source, each read the way
the resolver's steps say (catalog/names.py)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from gpumem_tui.catalog import CatalogError, LookupFailed, load_catalog


def test_no_name_is_claimed_by_two_entries(catalog):
    owners = defaultdict(set)
    for key, spec in catalog.models.items():
        for name in spec.names:
            owners[name.lower()].add(key)
            owners[name.split("/", 1)[-1].lower()].add(key)
    assert {name: keys for name, keys in owners.items() if len(keys) > 1} == {}


def test_every_repository_alias_names_a_repository_and_its_source(catalog):
    aliases = [alias for spec in catalog.models.values() for alias in spec.repo_aliases]
    assert len(aliases) >= 20
    assert all("/" in alias.id and alias.source.strip() for alias in aliases)
    assert all(not any("/" in name for name in spec.aliases) for spec in catalog.models.values())


def test_a_repository_alias_without_its_source_is_refused(tmp_path):
    (tmp_path / "mine.toml").write_text(
        '[models."acme/x"]\nrepo_aliases = [{id = "acme/x-chat"}]\narchitecture = "LlamaForCausalLM"\n'
        "layers = 2\nhidden_size = 64\nintermediate_size = 128\nattention_heads = 4\nkv_heads = 4\nvocab_size = 100\n"
    )
    with pytest.raises(CatalogError, match="repo_aliases.0.source"):
        load_catalog([tmp_path])


@pytest.mark.parametrize(
    "name, entry, exact, quantization",
    [
        ("META-LLAMA/LLAMA-3.1-70B-INSTRUCT", "meta-llama/Llama-3.1-70B", True, None),
        ("Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-70B", True, None),
        ("/models/Llama-3.1-8B-Instruct/", "meta-llama/Llama-3.1-8B-Instruct", False, None),
        ("RedHatAI/Llama-3.2-1B-Instruct-FP8-dynamic", "meta-llama/Llama-3.2-1B", False, "fp8"),
        ("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "meta-llama/Llama-3.1-70B", False, "awq"),
        ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "Qwen/Qwen2.5-7B-Instruct", False, "gptq"),
        ("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16", "meta-llama/Llama-3.1-8B-Instruct", False, "w4a16"),
    ],
)
def test_each_step_of_the_resolver(catalog, name, entry, exact, quantization):
    match = catalog.match_model(name)
    assert (match.entry, match.exact, match.quantization) == (entry, exact, quantization)
    assert match.spec.checkpoint_format == quantization or quantization is None


def test_a_quantized_copy_is_its_model_under_its_own_name(catalog):
    copy = catalog.model("RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8")
    base = catalog.model("meta-llama/Llama-3.1-70B")
    assert copy.id == "RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8" and copy.checkpoint_format == "fp8"
    assert copy.model_copy(update={"id": base.id, "checkpoint_format": None}) == base


def test_the_nearest_names_come_closest_first(catalog):
    with pytest.raises(LookupFailed) as err:
        catalog.model("mistralai/Mistral-7B-Instruct-v0.3")
    assert err.value.suggestions[0] == "mistralai/Mistral-7B-v0.1"
    assert catalog.nearest_models("zzzz") == []

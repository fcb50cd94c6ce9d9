"""config.json's chunked local attention (Llama 4: `attention_chunk_size`, `no_rope_layers`), read into
the model spec the KV layout groups by (issue 15, term 5)."""

import json

import pytest

from gpumem_tui.catalog import CatalogError
from gpumem_tui.catalog.hfconfig import model_from_config
from tests.datafiles import HUB_CONFIGS


def scout() -> dict:
    return json.loads((HUB_CONFIGS / "Llama-4-Scout-17B-16E.json").read_text())


def test_scout_chunks_three_layers_in_four():
    """vLLM 0.19.0 llama4.py:188-189, 258-259: a layer whose no_rope_layers entry is 0 (NoPE) is full
    attention, the others ChunkedLocalAttention of attention_chunk_size; Scout's list is 1, 1, 1, 0, ..."""
    spec, _ = model_from_config(scout(), "hand-made")
    assert spec.chunked_attention is not None
    assert spec.chunked_attention.size == 8192
    assert spec.chunked_attention.full_every == 4
    assert spec.chunked_layer_count() == 36


def test_without_a_list_transformers_default_interval_of_4_holds():
    """transformers' Llama4TextConfig fills no_rope_layers from no_rope_layer_interval (default 4)."""
    config = scout()
    del config["text_config"]["no_rope_layers"]
    spec, _ = model_from_config(config, "hand-made")
    assert spec.chunked_attention is not None and spec.chunked_attention.full_every == 4
    config["text_config"]["no_rope_layer_interval"] = 6
    spec, _ = model_from_config(config, "hand-made")
    assert spec.chunked_attention is not None and spec.chunked_attention.full_every == 6


def test_no_chunk_size_means_no_chunked_layers():
    config = scout()
    config["text_config"]["attention_chunk_size"] = None
    spec, _ = model_from_config(config, "hand-made")
    assert spec.chunked_attention is None


def test_a_list_that_is_not_every_kth_layer_is_an_error_naming_the_key():
    config = scout()
    config["text_config"]["no_rope_layers"][0] = 0
    with pytest.raises(CatalogError, match="no_rope_layers"):
        model_from_config(config, "hand-made")

"""config.json import, offline: each known family counts the same parameters as the verified catalog."""

import json
import os
import struct
from pathlib import Path

import pytest

from gpumem_tui.catalog import CatalogError
from gpumem_tui.catalog.hfconfig import find_config, model_from_config
from gpumem_tui.catalog.safetensors import checkpoint_bytes
from gpumem_tui.cli import main
from gpumem_tui.planner.kv import kv_bytes_per_token
from gpumem_tui.planner.params import count_params
from tests.datafiles import REFERENCE
from tests.disk_reads import listings

MODEL_TYPES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "GptOssForCausalLM": "gpt_oss",
    "Gemma2ForCausalLM": "gemma2",
    "Phi3ForCausalLM": "phi3",
}
CONFIG_KEYS = [
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "tie_word_embeddings",
    "max_position_embeddings",
    "torch_dtype",
    "attention_bias",
]


def hf_config(ref: dict) -> dict:
    """A config.json with the published keys, rebuilt from the verified reference entry."""
    config = {"architectures": [ref["architecture"]], "model_type": MODEL_TYPES[ref["architecture"]]}
    config.update({k: ref[k] for k in CONFIG_KEYS if ref.get(k) is not None})
    config.update({k: v for k, v in (ref.get("moe") or {}).items() if not isinstance(v, (dict, list))})
    config.update(ref.get("mla") or {})
    if ref.get("quantization_config"):
        config["quantization_config"] = ref["quantization_config"]
    window = ref.get("sliding_window") or {}
    if isinstance(window.get("sliding_window"), int):
        config["sliding_window"] = window["sliding_window"]
    return config


def reference_models():
    models = json.loads(REFERENCE.read_text())["models"]
    return [(mid, m) for mid, m in models.items() if m.get("architecture") in MODEL_TYPES and m.get("vocab_size")]


@pytest.mark.parametrize("model_id, ref", reference_models(), ids=[m for m, _ in reference_models()])
def test_config_import_counts_like_the_reference(model_id, ref):
    spec, warnings = model_from_config(hf_config(ref), model_id)
    assert count_params(spec).total == ref["params_total_computed"]
    assert warnings == []
    per_token = ref.get("kv_cache_bytes_per_token_bf16") or ref.get("kv_cache_bytes_per_token_bf16_if_all_layers_full")
    if per_token:
        assert kv_bytes_per_token(spec, "bf16") == per_token


def test_gpt_oss_and_deepseek_keep_their_checkpoint_format_and_attention():
    refs = dict(reference_models())
    gpt, _ = model_from_config(hf_config(refs["openai/gpt-oss-120b"]), "openai/gpt-oss-120b")
    assert gpt.checkpoint_format == "mxfp4" and gpt.sliding_layer_count() == 18
    deepseek, _ = model_from_config(hf_config(refs["deepseek-ai/DeepSeek-V3"]), "deepseek-ai/DeepSeek-V3")
    assert deepseek.checkpoint_format == "fp8" and kv_bytes_per_token(deepseek, "bf16") == 70_272


def test_gemma3_reads_text_config_and_names_the_defaults_it_used():
    config = {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "model_type": "gemma3",
        "text_config": {
            "model_type": "gemma3_text",
            "head_dim": 128,
            "hidden_size": 5376,
            "intermediate_size": 21504,
            "num_attention_heads": 32,
            "num_hidden_layers": 62,
            "num_key_value_heads": 16,
            "query_pre_attn_scalar": 168,
            "sliding_window": 1024,
        },
    }
    spec, warnings = model_from_config(config, "google/gemma-3-27b-it")
    assert spec.head_size == 128 and spec.vocab_size == 262208 and spec.tie_word_embeddings
    assert spec.sliding_layer_count() == 52
    assert any("vocab_size" in w and "262208" in w for w in warnings)


def test_unknown_architecture_is_a_best_effort_with_a_warning():
    config = {
        "model_type": "brandnew",
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "num_hidden_layers": 4,
        "num_attention_heads": 16,
        "vocab_size": 1000,
    }
    spec, warnings = model_from_config(config, "lab/brandnew")
    assert spec.kv_heads == 16
    assert any("brandnew" in w for w in warnings) and any("num_key_value_heads" in w for w in warnings)


def test_a_config_missing_the_shape_is_a_clear_error():
    with pytest.raises(CatalogError, match="num_hidden_layers"):
        model_from_config({"model_type": "llama", "num_attention_heads": 8}, "x")


def write_safetensors(path: Path, tensors: dict[str, tuple[str, int]]) -> None:
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, nbytes) in tensors.items():
        per = {"BF16": 2, "F32": 4}.get(dtype, 1)
        header[name] = {"dtype": dtype, "shape": [nbytes // per], "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)


def small_model_dir(tmp_path: Path) -> Path:
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 1000,
        "torch_dtype": "bfloat16",
        "max_position_embeddings": 4096,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    write_safetensors(tmp_path / "model-00001-of-00002.safetensors", {"a": ("BF16", 1000), "s": ("F32", 64)})
    write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"b": ("F8_E4M3", 500)})
    return tmp_path


def test_safetensors_headers_give_exact_bytes_per_dtype(tmp_path):
    found = checkpoint_bytes(small_model_dir(tmp_path))
    assert found.files == 2 and found.tensors == 3
    assert found.bytes_by_dtype == {"BF16": 1000, "F32": 64, "F8_E4M3": 500} and found.total_bytes == 1564


def test_a_broken_safetensors_file_is_named(tmp_path):
    (tmp_path / "x.safetensors").write_bytes(b"\xff" * 16)
    with pytest.raises(CatalogError, match="x.safetensors"):
        checkpoint_bytes(tmp_path)


def test_plan_from_a_model_directory_uses_the_header_bytes(tmp_path, capsys):
    model_dir = small_model_dir(tmp_path)
    assert main(["plan", "--config", str(model_dir), "--gpu", "l4", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["weights_bytes"] == 1564
    assert any("safetensors" in w for w in plan["warnings"])


def test_an_hf_id_is_found_in_the_local_cache_and_nothing_is_downloaded(tmp_path, monkeypatch):
    snapshot = tmp_path / "hub" / "models--lab--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    small_model_dir(snapshot)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    assert find_config("lab/tiny") == snapshot / "config.json"
    with pytest.raises(CatalogError, match="not in the local Hugging Face cache"):
        find_config("lab/absent")


def test_the_cache_folder_is_listed_once_until_a_snapshot_arrives(tmp_path, monkeypatch):
    """The app plans every sample: an engine's model found in the HF cache is looked up by the folder's
    modification time, not listed again each time; a new snapshot (a download) is seen at once."""
    from gpumem_tui.catalog.hfconfig import find_cached

    snapshots = tmp_path / "hub" / "models--lab--listed" / "snapshots"
    (snapshots / "old").mkdir(parents=True)
    small_model_dir(snapshots / "old")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    with listings(snapshots) as listed:
        assert find_cached("lab/listed") == find_cached("lab/listed") == snapshots / "old" / "config.json"
    assert len(listed) == 1
    (snapshots / "new").mkdir()
    small_model_dir(snapshots / "new")
    os.utime(snapshots, ns=(snapshots.stat().st_mtime_ns + 10**9,) * 2)  # a coarse clock: the folder changed
    assert find_cached("lab/listed") == snapshots / "new" / "config.json"

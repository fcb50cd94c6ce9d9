"""Fuzz the local model files: config.json (through `plan --config` and `model_from_config`), safetensors
headers (through `plan --config DIR`, which reads them) and catalog TOML (through `catalog --catalog DIR`).
Whatever they hold: a documented exit, no traceback, strict JSON, and a plan whose terms are finite and >= 0."""

from __future__ import annotations

import json
import math
import struct
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpumem_tui.catalog import CatalogError
from gpumem_tui.catalog.hfconfig import KNOWN_MODEL_TYPES, model_from_config
from tests.fuzz.conftest import assert_clean, run_cli

SHAPE_KEYS = [
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "max_position_embeddings",
    "sliding_window",
    "sliding_window_pattern",
    "num_local_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "first_k_dense_replace",
    "n_shared_experts",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
]
BASE = {
    "model_type": "llama",
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
}
WITH_CAPSYS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
"""capsys is read (and so emptied) after every call: sharing it between examples is safe."""
TERMS = ["params_total", "params_active", "weights_bytes", "kv_bytes_per_token", "kv_bytes"]

sizes = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**6),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.sampled_from([0, 1, 2, 3, 7, 64, 4096, 2**31, 2**63, 10**9, 10**18]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)
model_types = st.sampled_from([*sorted(KNOWN_MODEL_TYPES), "brandnew", ""])


@st.composite
def configs(draw) -> dict:
    """A plausible config with some keys replaced by hostile values, the model type drawn too."""
    config = dict(BASE, model_type=draw(model_types))
    for key in draw(st.lists(st.sampled_from(SHAPE_KEYS), max_size=6, unique=True)):
        config[key] = draw(sizes)
    if draw(st.booleans()):
        config["layer_types"] = draw(st.lists(st.sampled_from(["full_attention", "sliding_attention", 1]), max_size=5))
    if draw(st.booleans()):
        config = {"model_type": config["model_type"], "text_config": config}
    return config


def _assert_plan_terms(out: str) -> None:
    plan = json.loads(out)
    for term in TERMS:
        assert plan[term] >= 0 and math.isfinite(plan[term]), (term, plan[term])
    for band in plan["per_gpu"]["bands"]:
        if band["name"] in ("weights", "kv_cache", "overhead"):
            assert band["bytes"] >= 0, band


@WITH_CAPSYS
@given(config=configs())
def test_config_json_through_plan(capsys, config):
    with tempfile.TemporaryDirectory() as where:
        Path(where, "config.json").write_text(json.dumps(config))  # Infinity and NaN as Python writes them
        code, out, err = run_cli(capsys, ["plan", "--config", where, "--gpu", "h100", "--json"])
    assert_clean(code, out, err, exits={0, 2}, json_out=True)
    if code == 0:
        _assert_plan_terms(out)
    else:
        assert err.count("\n") == 1


@given(config=configs())
def test_model_from_config_answers_a_spec_or_a_catalog_error(config):
    try:
        spec, warnings = model_from_config(config, "fuzz/model")
    except CatalogError:
        return
    assert 0 <= spec.sliding_layer_count() <= spec.layers and all(isinstance(w, str) for w in warnings)


nested = st.recursive(
    st.one_of(st.integers(), st.text(max_size=4), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=20,
)


@WITH_CAPSYS
@given(
    depth=st.one_of(st.integers(min_value=1, max_value=3_000), st.sampled_from([10_000, 100_000])),
    opener=st.sampled_from(["[", '{"a":', '{"h":[']),
)
def test_config_json_nested_to_any_depth(capsys, depth, opener):
    closer = {"[": "]", '{"a":': "}", '{"h":[': "]}"}[opener]
    with tempfile.TemporaryDirectory() as where:
        Path(where, "config.json").write_text(opener * depth + "1" + closer * depth)
        code, out, err = run_cli(capsys, ["plan", "--config", where, "--gpu", "h100"])
    assert_clean(code, out, err, exits={2})


DTYPES = ["BF16", "F16", "F32", "F8_E4M3", "I64", "U8", "F4", "BOOL", "Q9", "", None, 3]
tensor = st.fixed_dictionaries(
    {
        "dtype": st.sampled_from(DTYPES),
        "shape": st.one_of(st.lists(st.integers(min_value=-3, max_value=10**12), max_size=3), nested),
        "data_offsets": st.one_of(
            st.lists(st.integers(min_value=-10, max_value=2**64), min_size=0, max_size=3),
            st.tuples(st.just(0), st.integers(min_value=0, max_value=64)).map(list),
            nested,
        ),
    }
)


@st.composite
def safetensors_files(draw) -> bytes:
    kind = draw(st.sampled_from(["header", "bytes", "nested"]))
    if kind == "header":
        header = draw(st.dictionaries(st.text(max_size=6), st.one_of(tensor, nested), max_size=4))
        raw = json.dumps(header).encode()
    elif kind == "nested":
        depth = draw(st.one_of(st.integers(min_value=1, max_value=3_000), st.just(100_000)))
        raw = b"[" * depth + b"]" * depth
    else:
        raw = draw(st.binary(max_size=64))
    data = b"\0" * draw(st.integers(min_value=0, max_value=64))
    length = draw(st.one_of(st.just(len(raw)), st.integers(min_value=0, max_value=2**64 - 1)))
    return struct.pack("<Q", length) + raw + data


@WITH_CAPSYS
@given(file=safetensors_files())
def test_safetensors_headers_through_plan(capsys, file):
    with tempfile.TemporaryDirectory() as where:
        Path(where, "config.json").write_text(json.dumps(BASE))
        Path(where, "model.safetensors").write_bytes(file)
        code, out, err = run_cli(capsys, ["plan", "--config", where, "--gpu", "h100", "--json"])
    assert_clean(code, out, err, exits={0, 2}, json_out=True)
    if code == 0:
        _assert_plan_terms(out)


toml_values = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(
        [
            "inf",
            "-inf",
            "nan",
            "0",
            "-1",
            "1e308",
            "true",
            '"x"',
            "[]",
            "{}",
            "9" * 5000,
            "[" * 3000 + "]" * 3000,
            "1_000_000_000",
        ]
    ),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
MODEL_KEYS = [
    "layers",
    "hidden_size",
    "intermediate_size",
    "attention_heads",
    "kv_heads",
    "head_dim",
    "vocab_size",
    "max_context",
    "norms_per_layer",
    "params_total_published",
]


@st.composite
def catalog_files(draw) -> str:
    model = {
        "architecture": '"x"',
        "layers": "32",
        "hidden_size": "4096",
        "intermediate_size": "14336",
        "attention_heads": "32",
        "kv_heads": "8",
        "vocab_size": "128256",
    }
    for key in draw(st.lists(st.sampled_from(MODEL_KEYS), max_size=4, unique=True)):
        model[key] = draw(toml_values)
    if draw(st.booleans()):
        model["sliding_window"] = f"{{ size = {draw(toml_values)}, global_every = {draw(toml_values)} }}"
    if draw(st.booleans()):
        model["moe"] = (
            f"{{ experts = {draw(toml_values)}, experts_per_token = {draw(toml_values)}, "
            f"expert_intermediate_size = {draw(toml_values)} }}"
        )
    lines = ['[models."fuzz/model"]', *(f"{key} = {value}" for key, value in model.items())]
    lines += [
        "[gpus.fuzz]",
        f"total_mib = {draw(toml_values)}",
        "[formats.fuzz]",
        f"bits_per_param = {draw(toml_values)}",
    ]
    return "\n".join(lines) + "\n"


@WITH_CAPSYS
@given(text=catalog_files())
def test_catalog_toml_through_the_catalog_and_a_plan(capsys, text):
    with tempfile.TemporaryDirectory() as where:
        Path(where, "fuzz.toml").write_text(text)
        code, out, err = run_cli(capsys, ["catalog", "--catalog", where, "--json"])
        assert_clean(code, out, err, exits={0, 2}, json_out=True)
        if code != 0:
            return
        code, out, err = run_cli(
            capsys, ["plan", "--catalog", where, "--model", "fuzz/model", "--gpu", "h100", "--json"]
        )
    assert_clean(code, out, err, exits={0, 2}, json_out=True)
    if code == 0:
        _assert_plan_terms(out)

"""Malformed local model files (config.json, safetensors headers, catalog TOML) end in one line and exit 2;
sizes a file declares are bounded, per-layer structures are counted, and a plan has no negative term."""

from __future__ import annotations

import json
import struct

import pytest
from pydantic import ValidationError

from gpumem_tui.catalog import ModelSpec, SlidingWindowSpec, load_catalog
from gpumem_tui.cli import main
from gpumem_tui.planner.budget import make_plan
from gpumem_tui.planner.kv import sequence_bytes_per_gpu
from gpumem_tui.planner.records import PlanInput
from tests.configs import SMALL_LLAMA

CONFIG = SMALL_LLAMA
GEMMA = {**CONFIG, "model_type": "gemma2", "head_dim": 256, "sliding_window": 4096}


def _one_line_exit_2(capsys, argv) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and err.startswith("gpumem-tui: "), (code, err[-500:])
    assert "Traceback" not in out + err
    return err


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"a":' * 100_000 + "1" + "}" * 100_000, "nested too deeply"),
        ('{"a":' * 600 + "1" + "}" * 600, "nested too deeply"),  # within the parser's reach, not a config's
        (json.dumps(CONFIG)[:-1] + ', "vocab_size": ' + "9" * 5000 + "}", "integer too long to read"),
        (json.dumps({**CONFIG, "hidden_size": float("inf")}), "hidden_size is inf"),
        (json.dumps({**CONFIG, "num_hidden_layers": float("nan")}), "num_hidden_layers is nan"),
        (json.dumps({**CONFIG, "hidden_size": 2048.5}), "not a whole number"),
        (json.dumps({**CONFIG, "num_attention_heads": True}), "not a whole number"),
        (json.dumps({**CONFIG, "hidden_size": 16}), "smaller than its 32 attention heads"),
        (json.dumps({**CONFIG, "hidden_size": 2050}), "does not split into 32 attention heads"),
        (json.dumps({**CONFIG, "num_key_value_heads": 64}), "more than the 32 attention heads"),
        (json.dumps({**CONFIG, "num_hidden_layers": 10**9}), "layers: Input should be less than or equal to"),
        (json.dumps({**GEMMA, "num_hidden_layers": 10**9}), "layers: Input should be less than or equal to"),
        (json.dumps({**CONFIG, "vocab_size": 10**12}), "vocab_size"),
        (json.dumps({**CONFIG, "max_position_embeddings": 10**15}), "max_context"),
        (json.dumps({**CONFIG, "num_local_experts": 10**12, "num_experts_per_tok": 2}), "experts"),
        (json.dumps({**CONFIG, "num_local_experts": 8, "num_experts_per_tok": 9}), "more than the 8 experts"),
        (json.dumps({**CONFIG, "num_local_experts": 8, "first_k_dense_replace": 17}), "more than the 16 layers"),
        (
            json.dumps(
                {
                    **CONFIG,
                    "model_type": "deepseek_v3",
                    "kv_lora_rank": -5,
                    "qk_nope_head_dim": 1,
                    "qk_rope_head_dim": 1,
                    "v_head_dim": 1,
                }
            ),
            "kv_lora_rank",
        ),
        (b"\xff\xfe not text", "not UTF-8"),
    ],
    ids=[
        "deep-list",
        "deep-object",
        "600-deep",
        "4300-digits",
        "inf",
        "nan",
        "fraction",
        "bool",
        "hidden<heads",
        "not-divisible",
        "kv>heads",
        "1e9-layers",
        "1e9-sliding-layers",
        "vocab",
        "context",
        "experts",
        "per-token>experts",
        "dense>layers",
        "mla-negative",
        "not-utf8",
    ],
)
def test_a_malformed_config_is_one_line_and_exit_2(tmp_path, capsys, text, says):
    (tmp_path / "config.json").write_bytes(text if isinstance(text, bytes) else text.encode())
    err = _one_line_exit_2(capsys, ["plan", "--config", str(tmp_path), "--gpu", "h100"])
    assert says in err  # refused by its bounds before anything is sized (1e9 layers once took 22.9 GB)


def _header(path, header: object, data: bytes = b"", length: int | None = None) -> None:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + data)


def _tensor(dtype="BF16", shape=(4,), offsets=(0, 8)) -> dict:
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


@pytest.mark.parametrize(
    ("header", "data", "length", "says"),
    [
        ({"w": _tensor()}, b"\0" * 8, 2**40, "more than the file or the format allows"),
        ({"w": _tensor()}, b"\0" * 8, 2**63, "more than the file or the format allows"),
        (b"not json at all", b"", None, "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, b"", None, "nested too deeply"),
        (b"[1, 2]", b"", None, "not a JSON object"),
        ({"w": _tensor(dtype="Q3")}, b"\0" * 8, None, "unknown dtype"),
        ({"w": _tensor(dtype=["BF16"])}, b"\0" * 8, None, "unknown dtype \"['BF16']"),  # exit 70 before
        ({"w": _tensor(dtype={"BF16": 1})}, b"\0" * 8, None, "unknown dtype"),
        ({"w": _tensor(shape=(-4,))}, b"\0" * 8, None, "shape is not a list of counts"),
        ({"w": _tensor(shape=(10**30, 10**30))}, b"\0" * 8, None, "do not match"),
        ({"w": _tensor(offsets=(0, 10**18))}, b"\0" * 8, None, "outside the 8 data bytes"),
        ({"w": _tensor(offsets=(8, 0))}, b"\0" * 8, None, "outside"),
        ({"w": _tensor(offsets=(0,))}, b"\0" * 8, None, "two byte offsets"),
        ({"w": "BF16"}, b"", None, "not a table"),
    ],
    ids=[
        "length-past-file",
        "length-2^63",
        "not-json",
        "deep",
        "not-object",
        "dtype",
        "dtype-list",
        "dtype-table",
        "negative-shape",
        "huge-shape",
        "offsets-past-data",
        "offsets-reversed",
        "one-offset",
        "entry-not-table",
    ],
)
def test_a_malformed_safetensors_header_is_one_line_and_exit_2(tmp_path, capsys, header, data, length, says):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    _header(tmp_path / "model.safetensors", header, data, length)
    err = _one_line_exit_2(capsys, ["plan", "--config", str(tmp_path), "--gpu", "h100"])
    assert "model.safetensors" in err and says in err


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ("x = " + "[" * 5000 + "]" * 5000, "nested too deeply"),
        ("[formats.q]\nbits_per_param = " + "9" * 5000, "integer too long to read"),
        ("[formats.q]\nbits_per_param = inf", "finite number"),
        ("[gpus.g]\nnominal_gib = nan", "finite number"),
        (
            '[models."a/b"]\narchitecture = "x"\nlayers = 1000000000\nhidden_size = 4096\nintermediate_size = 1\n'
            "attention_heads = 32\nkv_heads = 8\nvocab_size = 10\nsliding_window = {size = 10}",
            "layers",
        ),
    ],
    ids=["deep", "4300-digits", "inf", "nan", "1e9-sliding-layers"],
)
def test_a_malformed_catalog_file_is_one_line_and_exit_2(tmp_path, capsys, toml, says):
    (tmp_path / "bad.toml").write_text(toml)
    err = _one_line_exit_2(capsys, ["catalog", "--catalog", str(tmp_path)])
    assert "bad.toml" in err and says in err


def test_sliding_layers_are_counted_never_listed():
    window = SlidingWindowSpec(size=4096, global_every=6)
    huge = ModelSpec.model_construct(  # past the schema's bound, as an unchecked record would be
        id="x",
        layers=10**12,
        hidden_size=4096,
        intermediate_size=1,
        attention_heads=32,
        kv_heads=8,
        head_dim=None,
        vocab_size=10,
        sliding_window=window,
    )
    # a list per layer would need terabytes at 10^12 layers: counting is the only way this returns
    assert huge.sliding_layer_count() == 10**12 - 10**12 // 6
    assert sequence_bytes_per_gpu(huge, 8192, "bf16") > 0


def test_a_model_whose_arithmetic_goes_negative_is_refused_not_fitted():
    catalog = load_catalog()
    broken = catalog.model("llama-3.1-8b").model_copy(update={"intermediate_size": -100_000})  # no validation
    inp = PlanInput(model=broken, gpu=catalog.gpu("h100"), weights_format=catalog.format("bf16"))
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        make_plan(inp)


def test_a_config_path_that_is_no_regular_file_is_said_to_be_so(capsys):
    """`plan --config /dev/zero` said "no such file" of a path that exists."""
    assert main(["plan", "--config", "/dev/zero", "--gpu", "h100"]) == 2
    assert capsys.readouterr().err == "gpumem-tui: /dev/zero: not a regular file or a directory\n"

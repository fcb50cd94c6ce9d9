"""AWQ and GPTQ checkpoints (a config.json with a quantization_config, or a catalog model that ships int4)
sized by vLLM's and SGLang's rules as those engines load them: the checkpoint's method, not an error."""

import json

import pytest

from gpumem_tui.catalog.hfconfig import model_from_config
from gpumem_tui.cli import main
from gpumem_tui.planner.dtypes import PlanInputError
from gpumem_tui.planner.params import count_params
from gpumem_tui.planner.vllm.from_log import quantization_method
from gpumem_tui.planner.vllm.loaded import QUANTIZATION, loaded_weight_bytes, quantization_of
from tests.configs import SMALL_LLAMA

AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}


def write(tmp_path, name, quant=None):
    folder = tmp_path / name
    folder.mkdir()
    config = dict(SMALL_LLAMA, quantization_config=quant) if quant else SMALL_LLAMA
    (folder / "config.json").write_text(json.dumps(config))
    return folder / "config.json"


def engine_weights(capsys, *argv):
    assert main(["plan", *argv, "--gpu", "h100", "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)["engine"]["weights_bytes"]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("quant, method", [(AWQ, "awq"), (GPTQ, "gptq")])
def test_a_quantized_config_is_sized_as_its_method(tmp_path, capsys, engine, quant, method):
    """The checkpoint's own method (no --quantization) holds the bytes that method names on the plain model."""
    shipped = engine_weights(capsys, "--config", str(write(tmp_path, method, quant)), "--engine", engine)
    plain = str(write(tmp_path, "plain"))
    asked = engine_weights(capsys, "--config", plain, "--engine", engine, "--quantization", method)
    assert shipped == asked < engine_weights(capsys, "--config", plain, "--engine", engine)


def test_awq_holds_its_zero_points_and_8_bit_gptq_is_int8():
    assert model_from_config(dict(SMALL_LLAMA, quantization_config=AWQ), "m")[0].checkpoint_format == "awq"
    assert QUANTIZATION["awq"][1] > QUANTIZATION["gptq"][1]
    spec, warnings = model_from_config(dict(SMALL_LLAMA, quantization_config=dict(GPTQ, bits=8)), "m")
    assert spec.checkpoint_format == "int8" and warnings == []
    spec, warnings = model_from_config(dict(SMALL_LLAMA, quantization_config=dict(GPTQ, bits=3)), "m")
    assert spec.checkpoint_format == "gptq" and warnings == ["gptq checkpoint of 3-bit weights: sized as 4-bit"]


def test_a_quantized_copy_by_its_name_holds_its_methods_layout(catalog):
    """-AWQ and -GPTQ names are sized as vLLM loads those checkpoints (0.19.0): 4-bit values and an fp16 scale
    per group of 128 in every output column, and AWQ's packed 4-bit zero point beside it (awq_marlin keeps
    them; gptq_marlin frees GPTQ's), not both as w4a16."""
    base = catalog.model("meta-llama/Llama-3.1-8B")
    linear = count_params(base).linear
    awq, gptq = catalog.model("x/Llama-3.1-8B-AWQ"), catalog.model("x/Llama-3.1-8B-GPTQ-Int4")
    assert (awq.checkpoint_format, gptq.checkpoint_format) == ("awq", "gptq")
    assert quantization_of(None, awq) == ("linear", 4 + (16 + 4) / 128)
    assert quantization_of(None, gptq) == quantization_of("w4a16", base) == ("linear", 4 + 16 / 128)
    awq_bytes, gptq_bytes = (loaded_weight_bytes(spec, 2, quantization_of(None, spec)) for spec in (awq, gptq))
    assert awq_bytes - gptq_bytes == pytest.approx(linear * 4 / 128 / 8, abs=1)  # the zero points alone
    # a log that names the method it ran sizes it so
    assert (quantization_method("awq_marlin", None), quantization_method("gptq_marlin", "awq")) == (
        "awq_marlin",
        "gptq_marlin",
    )


@pytest.mark.parametrize(
    "quant, group, bits",
    [
        (GPTQ, 128, 4.125),
        (dict(GPTQ, group_size=32), 32, 4.5),
        (dict(GPTQ, group_size=-1), -1, 4.0),  # one scale per output column
        (dict(AWQ, group_size=64), 64, 4 + 20 / 64),
        ({"quant_method": "awq", "w_bit": 4, "q_group_size": 32, "zero_point": True}, 32, 4.625),  # AutoAWQ's keys
        (dict(AWQ, group_size=None), None, 4 + 20 / 128),
    ],
)
def test_the_group_size_comes_from_the_config(quant, group, bits):
    spec, warnings = model_from_config(dict(SMALL_LLAMA, quantization_config=quant), "m")
    assert (spec.quant_group_size, quantization_of(None, spec), warnings) == (group, ("linear", bits), [])


def test_a_group_size_that_is_no_count_is_said_and_sized_at_128():
    spec, warnings = model_from_config(dict(SMALL_LLAMA, quantization_config=dict(AWQ, group_size=0)), "m")
    assert spec.quant_group_size is None and quantization_of(None, spec) == ("linear", 4 + 20 / 128)
    assert warnings == ["awq checkpoint's group_size 0 is not a whole number of weights: sized at 128"]


def test_check_plans_an_awq_config(tmp_path, capsys):
    config = str(write(tmp_path, "awq", AWQ))
    assert main(["check", "--demo", "--config", config, "-v"]) in (0, 1, 2)
    out = capsys.readouterr().out
    assert "no prediction" not in out and "unknown quantization" not in out


INT4_MODEL = """[models.tiny-int4]
architecture = "LlamaForCausalLM"
layers = 16
hidden_size = 2048
intermediate_size = 8192
attention_heads = 32
kv_heads = 8
vocab_size = 128256
checkpoint_format = "int4"
"""


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_catalog_model_that_ships_int4_plans_and_fits(tmp_path, capsys, engine):
    (tmp_path / "m.toml").write_text(INT4_MODEL)
    base = ["--model", "tiny-int4", "--gpu", "h100", "--engine", engine, "--catalog", str(tmp_path), "--json"]
    assert main(["plan", *base]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["weights_format"] == "int4"
    assert main(["fit", *base]) == 0, capsys.readouterr().err


def test_an_unknown_checkpoint_format_is_named_as_given():
    spec = model_from_config(SMALL_LLAMA, "tiny")[0].model_copy(update={"checkpoint_format": "fp3"})
    with pytest.raises(PlanInputError, match=r"tiny's checkpoint format 'fp3'"):
        quantization_of(None, spec)
    assert quantization_of("int4", spec) == quantization_of("w4a16", spec)

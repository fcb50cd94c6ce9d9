"""`plan --engine vllm` ends with the command that launches the plan it decided: read back by our own
launch-flag reader (as the node's auto plan reads a running engine), it gives the same settings and the same
prediction; `--json` carries it; its flags are spelt as the plan's vLLM release takes them."""

from __future__ import annotations

import json
import shlex

import pytest

from gpumem_tui.cli import main
from gpumem_tui.diagnosis.autoplan import auto_settings
from gpumem_tui.planner.vllm import predict
from gpumem_tui.sources.engines.launch_flags import launch_flags, number

SEVENTY_B = ["plan", "--model", "llama-3.1-70b", "--gpu", "h100", "--weights", "fp8", "--kv-dtype", "fp8"]
SEVENTY_B += ["--context", "8192", "--utilization", "0.9", "--engine", "vllm"]


def _printed(capsys, argv: list[str]) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


def test_the_launch_line_read_back_gives_the_plan_it_came_from(capsys, catalog):
    plan = json.loads(_printed(capsys, [*SEVENTY_B, "--json"]))
    last = _printed(capsys, SEVENTY_B).rstrip("\n").splitlines()[-1]
    assert last == plan["launch"]["command"] and last.startswith("vllm serve meta-llama/Llama-3.1-70B ")
    assert shlex.split(last) == plan["launch"]["argv"] and plan["launch"]["notes"] == []

    flags = launch_flags(shlex.split(last))
    assert flags["model"] == plan["model"] and number(flags, "--tensor-parallel-size") == plan["gpus"] == 2
    spec, gpu = catalog.model(flags["model"]), catalog.gpu(plan["gpu"])
    found: list[str] = []
    read = auto_settings(spec, gpu, plan["gpus"], None, flags, found, [], [])
    assert read is not None
    assert (read.quantization, read.kv_cache_dtype, read.max_model_len, read.utilization) == ("fp8", "fp8", 8192, 0.9)
    assert "quantization fp8 (from the command line)" in found  # read, not assumed
    again = predict(read.model_copy(update={"block_size": None}))  # the block size is the release's default
    engine = plan["engine"]
    assert (again.weights_bytes, again.kv_cache_bytes, again.num_gpu_blocks) == (
        engine["weights_bytes"],
        engine["kv_cache_bytes"],
        engine["num_gpu_blocks"],
    )


@pytest.mark.parametrize(
    ("extra", "argv_has", "argv_lacks"),
    [
        (["--vllm-version", "0.5.0"], ["python", "-m", "vllm.entrypoints.openai.api_server", "--model"], ["serve"]),
        (["--vllm-version", "0.10.1", "--kv-cache-memory", "20GB"], ["serve"], ["--kv-cache-memory-bytes"]),
        (["--vllm-version", "0.10.2", "--kv-cache-memory", "20GB"], ["--kv-cache-memory-bytes", "20000000000"], []),
    ],
)
def test_each_flag_is_spelt_or_left_out_as_the_release_takes_it(capsys, extra, argv_has, argv_lacks):
    plan = json.loads(_printed(capsys, [*SEVENTY_B, *extra, "--json"]))
    argv = plan["launch"]["argv"]
    assert all(word in argv for word in argv_has) and not any(word in argv for word in argv_lacks)
    assert launch_flags(argv)["model"] == "meta-llama/Llama-3.1-70B"
    if argv_lacks == ["--kv-cache-memory-bytes"]:
        assert plan["launch"]["notes"] == ["vLLM 0.10.1 has no --kv-cache-memory-bytes (0.10.2 and later): left out"]


@pytest.mark.parametrize(("release", "value"), [("0.8.0", "image=0"), ("0.19.0", '{"image":0}')])
def test_a_vision_limit_is_written_as_its_release_reads_it(capsys, release, value):
    argv = ["plan", "--model", "google/gemma-3-12b-it", "--gpu", "h100", "--engine", "vllm"]
    plan = json.loads(
        _printed(capsys, [*argv, "--limit-mm-per-prompt", '{"image": 0}', "--vllm-version", release, "--json"])
    )
    launched = plan["launch"]["argv"]
    assert launched[launched.index("--limit-mm-per-prompt") + 1] == value


def test_weights_no_flag_can_make_are_said_not_flagged(capsys):
    plan = json.loads(
        _printed(
            capsys,
            ["plan", "--model", "llama-3.1-8b", "--gpu", "l4", "--weights", "int4", "--engine", "vllm", "--json"],
        )
    )
    assert "--quantization" not in plan["launch"]["argv"]
    assert plan["launch"]["notes"] and "serve a 4-bit checkpoint of the model" in plan["launch"]["notes"][0]


def test_an_hf_id_typed_for_the_model_is_served_as_typed(capsys):
    typed = "meta-llama/Meta-Llama-3.1-8B-Instruct"  # the catalog's alias of Llama-3.1-8B-Instruct
    plan = json.loads(_printed(capsys, ["plan", "--model", typed, "--gpu", "l4", "--engine", "vllm", "--json"]))
    assert plan["model"] == "meta-llama/Llama-3.1-8B-Instruct" and plan["launch"]["argv"][2] == typed
    short = json.loads(
        _printed(capsys, ["plan", "--model", "llama-3.1-8b", "--gpu", "l4", "--engine", "vllm", "--json"])
    )
    assert short["launch"]["argv"][2] == "meta-llama/Llama-3.1-8B"  # a short name is not one vLLM takes

"""`plan --engine sglang` as a user runs it: SGLang's own sizing decides, the plain method is the labelled
cross-check, the JSON keeps vLLM's shape, bad input is one line and exit 2."""

import json
import shlex

import pytest

from gpumem_tui.cli import main
from gpumem_tui.planner.sglang.versions import DEFAULT_VERSION

LLAMA_H100 = ["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "sglang"]
DEEPSEEK_H200 = ["plan", "--model", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--engine", "sglang"]


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_json_answers_by_sglang_and_keeps_the_plain_method_as_the_cross_check(capsys):
    plan = run_json(capsys, *LLAMA_H100, "--users", "20", "--context", "16384")
    engine = plan["engine"]
    assert plan["method"] == "sglang" and engine["name"] == "sglang" and engine["version"] == DEFAULT_VERSION
    assert plan["kv_pool_tokens"] == engine["kv_cache_tokens"] > 0
    assert plan["max_users_at_context"] == engine["kv_cache_tokens"] // 16384
    assert plan["fits"] == (engine["kv_cache_tokens"] >= 20 * 16384) and not engine["failures"]
    assert plan["cross_check"]["method"] == "plain" and "SGLang carves" in plan["cross_check"]["difference"]
    assert engine["fraction_rule"] and not engine["fraction_given"] and 0.8 < engine["mem_fraction_static"] < 0.9
    assert any(line.startswith("KV Cache is allocated. #tokens: ") for line in engine["log_lines"])
    argv = shlex.split(plan["launch"]["command"])
    assert argv[:5] == ["python", "-m", "sglang.launch_server", "--model-path", "meta-llama/Llama-3.1-8B"]
    assert argv[argv.index("--tp") + 1] == "1" and argv[argv.index("--context-length") + 1] == "16384"


def test_the_given_flags_reach_the_pool_and_the_launch_line(capsys):
    base = run_json(capsys, *LLAMA_H100, "--sglang-version", "0.4.6")
    given = run_json(
        capsys,
        *LLAMA_H100,
        "--sglang-version",
        "0.4.6",
        "--mem-fraction-static",
        "0.7",
        "--page-size",
        "16",
        "--max-total-tokens",
        "200001",
        "--cuda-graph-max-bs",
        "32",
        "--chunked-prefill-size",
        "4096",
    )
    assert base["engine"]["mem_fraction_static"] == 0.88 and given["engine"]["mem_fraction_static"] == 0.7
    assert given["engine"]["kv_cache_tokens"] == 200000  # clamped, then rounded down to 16
    argv = given["launch"]["argv"]
    for flag, value in [("--mem-fraction-static", "0.7"), ("--page-size", "16"), ("--cuda-graph-max-bs", "32")]:
        assert argv[argv.index(flag) + 1] == value


def test_the_text_says_the_fraction_the_pool_the_lines_and_the_launch(capsys):
    assert main(LLAMA_H100) == 0
    out = capsys.readouterr().out
    assert "mem_fraction_static 0.835 (SGLang's default" in out
    assert "Fits on 1 x H100-SXM-80GB by SGLang 0.5.6's own sizing" in out
    assert 'SGLang prints GiB and calls them "GB"' in out and "Cross-check, plain method" in out
    assert "Launch with SGLang 0.5.6:" in out and "python -m sglang.launch_server" in out


def test_the_heading_gives_the_utilization_to_the_cross_check_only(capsys):
    """SGLang sizes by its fraction: the plain method's utilization is not the engine's."""
    assert main(LLAMA_H100) == 0
    assert "90% utilization for the plain cross-check" in capsys.readouterr().out
    assert main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100"]) == 0  # vLLM: its own utilization
    out = capsys.readouterr().out
    assert "90% utilization" in out and "for the plain cross-check" not in out


def test_deepseek_v3_on_8_h200_starts_with_an_mla_pool_not_split_by_tp(capsys):
    plan = run_json(capsys, *DEEPSEEK_H200)
    engine = plan["engine"]
    assert engine["cell_bytes"] == 576 * 61 * 2 and not engine["failures"]
    assert any(
        line.startswith("KV Cache is allocated. #tokens: ") and "KV size" in line for line in engine["log_lines"]
    )


def test_weights_past_the_card_do_not_start_and_the_plan_says_why(capsys):
    plan = run_json(capsys, "plan", "--model", "deepseek-v3", "--gpu", "h100", "--gpus", "8", "--engine", "sglang")
    assert not plan["fits"] and plan["engine"]["failures"][0].startswith("Not enough memory")
    assert plan["kv_pool_bytes"] < 0 and plan["max_users_at_context"] == 0
    assert "Does not start on 8 x H100-SXM-80GB by SGLang" in plan["verdict"]


def test_dp_attention_is_planned_inside_the_tp_group(capsys):
    plan = run_json(capsys, *DEEPSEEK_H200, "--dp", "8", "--enable-dp-attention")
    assert plan["gpus"] == 8 and "--enable-dp-attention" in plan["launch"]["argv"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--sglang-version", "0.9.0"], "not a release the sizing rules know"),
        (["--mem-fraction-static", "1.2"], "must be between 0 and 1"),
        (["--dp", "2"], "without --enable-dp-attention"),
        (["--max-num-seqs", "8"], "--max-num-seqs is not a flag of --engine sglang"),
        (["--page-size", "0"], "must be from 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, extra, message):
    assert main([*LLAMA_H100, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_sglang_flags_with_vllm_are_a_usage_error(capsys):
    assert (
        main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "--mem-fraction-static", "0.8"])
        == 2
    )
    assert "--mem-fraction-static is not a flag of --engine vllm" in capsys.readouterr().err


@pytest.mark.parametrize(("flag", "engine"), [("--page-size 16", "sglang"), ("--max-num-seqs 64", "vllm")])
def test_an_engine_flag_without_engine_is_refused_not_dropped(capsys, flag, engine):
    """Without --engine the plain method plans and would ignore it."""
    assert main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100", *flag.split()]) == 2
    assert f"add --engine {engine}" in capsys.readouterr().err

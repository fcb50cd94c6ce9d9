"""Plans the engine itself would refuse: a context past the model's maximum (vLLM's and SGLang's config
check) and a --kv-cache-memory larger than the card. `--check` fails on them and no suggestion passes the
maximum."""

import json
import re
import shlex

import pytest

from gpumem_tui.catalog.hfconfig import model_from_config
from gpumem_tui.catalog.schema import ModelSpec
from gpumem_tui.cli import main
from gpumem_tui.planner.sglang.risks import longest_accepted as sglang_longest
from gpumem_tui.planner.vllm.lengths import longest_accepted as vllm_longest
from gpumem_tui.units import GIB, parse_size

PLAN = ["plan", "--model", "llama-3.1-8b", "--gpu", "h100"]


def plan(capsys, *argv):
    code = main([*PLAN, *argv, "--check"])
    return code, " ".join(capsys.readouterr().out.split())


def test_vllm_refuses_a_context_past_the_models_maximum(capsys):
    code, out = plan(capsys, "--context", "200000", "--engine", "vllm")
    assert code == 1
    assert "Does not start" in out and "Fits" not in out
    assert '"User-specified max_model_len (200000) is greater than the derived max_model_len"' in out
    assert "--max-model-len 131072 or less" in out and "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in out
    assert "Does not start on 1 x H100" in out  # the split its memory needs: no split cures a length
    assert "Launch with vLLM 0.33.0 (as asked: it does not start, see above):" in out
    # the cause is the length, not memory: 'Not even 8 of these GPUs fit this load' sent the user to buy GPUs
    assert "More GPUs do not change that: the maximum is the model's." in out and "Not even" not in out


def test_no_suggested_length_passes_the_models_maximum(capsys):
    code, out = plan(capsys, "--context", "99999999", "--engine", "vllm")
    assert code == 1
    said = [int(n.replace(",", "")) for n in re.findall(r"(?:up to|about) ([\d,]+) tokens", out)]
    assert said and max(said) <= 131072


def test_a_context_within_the_maximum_still_fits(capsys):
    code, out = plan(capsys, "--context", "131072", "--engine", "vllm")
    assert code == 0 and "Fits on 1 x" in out and "refuses" not in out


def test_sglang_refuses_a_context_past_the_models_maximum(capsys):
    code, out = plan(capsys, "--context", "200000", "--engine", "sglang")
    assert code == 1 and "Does not start" in out
    assert '"User-specified context_length (200000) is greater than the derived context_length (131072)"' in out
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in out


def test_the_derived_maximum_follows_each_engines_rope_rule(catalog):
    """Gemma 3's linear x8: vLLM skips it (its maximum already counts it), SGLang multiplies."""
    gemma = catalog.model("google/gemma-3-27b-it")
    assert gemma.rope_caches[0] == 8.0
    assert vllm_longest(gemma) == gemma.max_context
    assert sglang_longest(gemma) == gemma.max_context * 8
    linear: ModelSpec = catalog.model("llama-3.1-8b").model_copy(update={"rope_caches": [4.0]})
    assert vllm_longest(linear) == sglang_longest(linear) == 131072 * 4


def test_kv_cache_memory_larger_than_the_card_does_not_start(capsys):
    code, out = plan(capsys, "--engine", "vllm", "--kv-cache-memory", "1000GB")
    assert code == 1 and "Fits" not in out
    assert "--kv-cache-memory (931.32 GiB) does not fit" in out
    assert "CUDA out of memory allocating the KV cache" in out
    asked = re.search(r"pass (--kv-cache-memory \S+) or less", out).group(1)
    assert 60 < parse_size(asked.split()[1]) / GIB < 79.19
    assert "These GPUs hold" not in out  # no pool is allocated: no conversations to promise
    # the advice typed as it is printed, on the split it was said for, starts
    gpus = re.search(r"on (\d+) GPU\(s\), with room", out).group(1)
    code, out = plan(capsys, "--engine", "vllm", "--gpus", gpus, *shlex.split(asked))
    assert code == 0 and "does not fit" not in out, out


def test_a_pool_no_card_has_room_for_is_one_verdict_not_a_gpu_search(capsys):
    """The size is each GPU's (vLLM allocates it as given on every rank): more GPUs never make room for it, so
    the verdict says that with the largest size that starts, not 'Not even 8 of these GPUs fit this load'."""
    argv = ["plan", "--model", "llama-3.1-70b", "--gpu", "h100", "--engine", "vllm", "--kv-cache-memory", "1000GB"]
    assert main([*argv, "--check"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "Not even" not in out and "Fewest GPUs" not in out
    most = re.search(r"the largest that starts is ([\d.]+ GiB), on (\d+) GPU\(s\)", out)
    assert (
        "Does not start on any number of H100-SXM-80GB by vLLM 0.33.0's own sizing: --kv-cache-memory sets the KV "
        in out
    )
    assert "931.32 GiB is more than one H100-SXM-80GB leaves room for on any split" in out
    # the largest on the split named is the one its own prediction gives, and no split gives more
    assert most.group(2) == "8" and f"pass --kv-cache-memory {most.group(1).replace(' ', '')} or less." in out
    said = {n: plan_json(capsys, [*argv, "--gpus", n]) for n in ("2", "4", "8")}
    assert all("More GPUs do not make room for 931.32 GiB" in d["verdict"] for d in said.values())
    assert all(
        f"the largest any split starts with is {most.group(1)}, on 8 GPU(s)" in d["verdict"] for d in said.values()
    )
    assert all(d["fewest_gpus"] is None and not d["fits"] for d in said.values())
    # a size some split has room for keeps the search's answer
    assert main([*argv[:-1], "50GiB", "--check"]) == 0
    assert "Fewest GPUs that fit: 8." in " ".join(capsys.readouterr().out.split())


def plan_json(capsys, argv):
    main([*argv, "--json"])
    return json.loads(capsys.readouterr().out)


def test_a_pool_between_the_advice_and_the_failure_is_advised_a_size(capsys):
    """On 2 x H100 a 68 GiB pool fits (69.49 GiB is left beside the weights) but leaves the CUDA graphs and
    the sampler warm-up too little: the advice is the size that leaves them room, which clears the warning,
    not a lower --gpu-memory-utilization, which vLLM does not apply to a size given."""
    code, out = plan(capsys, "--engine", "vllm", "--gpus", "2", "--kv-cache-memory", "68GiB")
    assert code == 0 and "Fits on 2 x" in out and "lower --gpu-memory-utilization" not in out
    assert "pass --kv-cache-memory 66.97GiB or less, or lower --max-num-seqs" in out
    code, out = plan(capsys, "--engine", "vllm", "--gpus", "2", "--kv-cache-memory", "66.97GiB")
    assert code == 0 and "Fits on 2 x" in out and "out-of-memory" not in out


def test_kv_cache_memory_that_fits_still_fits(capsys):
    code, out = plan(capsys, "--engine", "vllm", "--kv-cache-memory", "40GiB")
    assert code == 0 and "Fits on 1 x" in out and "does not fit" not in out


def test_the_plain_plan_does_not_promise_conversations_past_the_maximum(capsys):
    """The plain method keeps its memory answer and its warning, and says what vLLM will say; `--check`
    answers as the verdict does (it exited 0 on a plan vLLM refuses), and `--json`'s `fits` stays memory only."""
    code, out = plan(capsys, "--context", "200000")
    assert code == 1
    assert "Fits in memory on 1 x" in out and "vLLM refuses to start with it" in out
    assert "hold 0 conversation(s) of 200,000 tokens, or 1 of up to 131,072 tokens" in out
    assert "exceeds meta-llama/Llama-3.1-8B's maximum of 131,072" in out
    code, out = plan(capsys, "--context", "200000", "--json")
    data = json.loads(out)
    assert code == 1 and data["fits"] and data["max_users_at_context"] == 0
    assert "vLLM refuses to start with it" in data["verdict"]
    assert plan(capsys, "--context", "131072")[0] == 0


def test_a_length_an_engine_already_runs_with_is_not_refused(catalog):
    """A log or a running engine passed vLLM's length check (or set the variable): only a plan's asked
    length is held to the maximum."""
    from gpumem_tui.planner.vllm import EngineSettings, predict

    asked = EngineSettings(model=catalog.model("llama-3.1-8b"), gpu=catalog.gpu("h100"), max_model_len=200000)
    assert not any("refuses" in f for f in predict(asked).failures)
    planned = asked.model_copy(update={"check_length": True})
    assert any("refuses to start" in f for f in predict(planned).failures)


QWEN2 = {
    "model_type": "qwen2",
    "architectures": ["Qwen2ForCausalLM"],
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "num_hidden_layers": 28,
    "vocab_size": 152064,
    "max_position_embeddings": 32768,
}


@pytest.mark.parametrize(
    "scaling, vllm, sglang",
    [
        (None, 32768, 32768),
        # Qwen2.5's card: YaRN x4 for 131,072 tokens; vLLM multiplies the original length, SGLang does not
        ({"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}, 131072, 32768),
        ({"rope_type": "dynamic", "factor": 2.0}, 65536, 65536),
        ({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}, 32768, 32768),
        ({"type": "linear", "factor": 2.0}, 65536, 65536),
    ],
)
def test_a_config_jsons_rope_scaling_moves_each_engines_maximum(scaling, vllm, sglang):
    config = {**QWEN2, **({"rope_scaling": scaling} if scaling else {})}
    spec, _ = model_from_config(config, "Qwen/Qwen2.5-7B-Instruct")
    assert (vllm_longest(spec), sglang_longest(spec)) == (vllm, sglang)


@pytest.mark.parametrize(
    ("engine", "then"),
    [
        (None, "though memory alone is counted above"),
        ("vllm", "so no split starts it"),
        ("sglang", "so no split starts it"),
    ],
)
def test_fit_says_a_length_past_the_maximum_is_refused(capsys, engine, then):
    """`fit --context 200000` showed 4/2/2 GPUs (or '-': 'not even 8') with no word that the engines refuse the
    length, where `plan` says they do."""
    argv = ["fit", "--model", "llama-3.1-8b", "--gpu", "h100", "--context", "200000"]
    assert main([*argv, *(["--engine", engine] if engine else [])]) == 0
    out = " ".join(capsys.readouterr().out.split())
    who = {"sglang": "SGLang"}.get(engine or "", "vLLM")
    assert (
        f"! 200,000 tokens is past meta-llama/Llama-3.1-8B's maximum of 131,072: {who} refuses to start with it, {then}"
        in out
    )
    assert main([*argv[:-1], "131072"]) == 0
    assert "past" not in capsys.readouterr().out

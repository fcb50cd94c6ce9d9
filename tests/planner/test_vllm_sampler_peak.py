"""The sampler's peak in vLLM's profile run (issue 15, term 1): what is alive when the dummy sampler runs,
pinned on hand-made shapes and on the v0.19 H100 calibration logs."""

import json

import pytest

from gpumem_tui.planner.vllm import EngineSettings, predict
from gpumem_tui.planner.vllm.from_log import Stated, release_of, settings_from
from gpumem_tui.planner.vllm.sampler import CUBLAS_WORKSPACE_HOPPER, sampler_parts, topk_buffer_rows
from gpumem_tui.planner.vllm.versions import rules_for
from gpumem_tui.units import GIB, MIB, gib
from tests.datafiles import CALIBRATION


def _settings(catalog, model="llama-3.1-8b", gpu="h100", **kw):
    kw.setdefault("version", "0.19.0")
    kw.setdefault("max_model_len", 8192)
    return EngineSettings(model=catalog.model(model), gpu=catalog.gpu(gpu), **kw)


def test_the_parts_on_llama_8b_at_1024_requests(catalog):
    """8,192 batched tokens, 1,024 requests, vocab 128,256 (already a multiple of 64), hidden 4,096, bf16,
    132 SMs: each part is one tensor of the 0.19.0 source."""
    parts = sampler_parts(rules_for("0.19.0"), catalog.model("llama-3.1-8b"), catalog.gpu("h100"), 8192, 1024, 2)
    rows, vocab, hidden = 1024, 128256, 4096
    assert parts.logits == rows * vocab * 2
    assert parts.fp32_work == 3 * rows * vocab * 4  # the fp32 copy, probs and q
    assert parts.topk_buffer == 132 * vocab * 4
    assert parts.hidden == 8192 * hidden * 2 + 2 * rows * hidden * 2
    assert parts.cublas == CUBLAS_WORKSPACE_HOPPER == 32 * MIB
    assert parts.total == parts.logits + parts.fp32_work + parts.topk_buffer + parts.hidden + parts.cublas


def test_the_logits_span_the_padded_vocab(catalog):
    """Qwen2.5's 152,064 is a multiple of 64; a vocab of 32,001 pads to 32,064 rows of the LM head."""
    spec = catalog.model("llama-3.1-8b").model_copy(update={"vocab_size": 32001})
    parts = sampler_parts(rules_for("0.19.0"), spec, catalog.gpu("h100"), 8192, 1024, 2)
    assert parts.logits == 1024 * 32064 * 2
    assert parts.fp32_work == 3 * 1024 * 32001 * 4


@pytest.mark.parametrize(("rows", "sms", "expected"), [(1024, 132, 132), (100, 132, 128), (16, 132, 16), (9, 108, 16)])
def test_the_triton_buffer_rows(rows, sms, expected):
    """min(next power of 2 of min(SMs, rows), SMs) rows (topk_topp_triton.py:1013-1019)."""
    assert topk_buffer_rows(rows, sms) == expected


def test_below_8_requests_the_pytorch_sort_path(catalog):
    """No Triton buffer; the sort keeps values, int64 indices, two masks and a softmax beside the fp32
    logits: 22 bytes per element, more than probs and q later (12)."""
    parts = sampler_parts(rules_for("0.19.0"), catalog.model("llama-3.1-8b"), catalog.gpu("h100"), 8192, 4, 2)
    assert parts.topk_buffer == 0
    assert parts.fp32_work == 4 * 128256 * 22


def test_an_unknown_sm_count_is_said_as_assumed(catalog):
    p = predict(_settings(catalog, gpu="l4"))
    assert any("SM count" in note and "assumed" in note for note in p.assumed)
    assert not any("SM count" in note for note in predict(_settings(catalog)).assumed)


def _v019_h100_cases(catalog):
    for case in json.loads(CALIBRATION.read_text()):
        release = release_of(case.get("vllm_version"), case["log_lines"])
        if release["version"] != "v0.19.0" or not case.get("activation_peak_gib"):
            continue
        if (case.get("pipeline_parallel_size") or 1) > 1 or "float32" in (case.get("dtype") or ""):
            continue
        try:
            settings = settings_from(catalog, Stated.from_case(case), release["version"])
        except LookupError:
            continue
        yield case, settings


def test_the_v019_h100_logs_peak_to_the_hundredth(catalog):
    """Every 16-bit single-stage v0.19 case the catalog knows whose peak is the sampler phase: the predicted
    peak rounds to what the log prints (Llama 3.1 8B 1.89, Qwen2.5 7B 2.21, Gemma 2 27B 3.66, Qwen2.5 72B
    at TP 2 2.29 GiB), within
    half a hundredth and 1 MiB: the small tensors left out (per-request scalars, sampled ids) and the
    allocator's rounding come to under 2 MiB."""
    checked = {}
    for case, settings in _v019_h100_cases(catalog):
        p = predict(settings)
        if "sampler_peak" not in p.terms:
            continue  # the forward pass is the peak (CodeLlama's 32k vocabulary): not this term's figure
        checked[case["model"]] = (round(p.activation_peak_bytes / GIB, 2), case["activation_peak_gib"])
        assert p.activation_peak_bytes / GIB == pytest.approx(case["activation_peak_gib"], abs=0.006), case["model"]
    assert {"google/gemma-2-27b-it", "Qwen/Qwen2.5-72B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"} <= set(checked)


def test_fp32_serving_keeps_todays_estimate(catalog):
    """In fp32 the cast makes no copy and the forward pass is wider; the source read does not give its
    peak, so the old estimate (2.22 GiB against the log's 2.21, calibration case 21) stays."""
    p = predict(_settings(catalog, dtype="float32"))
    assert p.activation_peak_bytes / GIB == pytest.approx(2.21, abs=0.02)


def test_releases_before_0_17_keep_the_sort_estimate(catalog):
    """The Triton top-k/top-p kernel arrived in 0.17.0 (0.16.0 has no topk_topp_triton.py)."""
    old = predict(_settings(catalog, version="0.16.0"))
    assert old.terms["sampler_peak"] == 6 * 8192 * 4096 * 2 + 36 * 1024 * 128256
    assert (
        predict(_settings(catalog, version="0.20.0")).terms["sampler_peak"]
        == (predict(_settings(catalog)).terms["sampler_peak"])
    )


def test_releases_after_0_20_say_the_sampler_is_assumed(catalog):
    """0.21 on were not read for the sampler; 0.33 makes Model Runner V2 the default."""
    assert any("Model Runner V2" in note for note in predict(_settings(catalog, version="0.33.0")).assumed)
    assert not any("Model Runner V2" in note for note in predict(_settings(catalog, version="0.20.0")).assumed)


def test_the_warm_up_after_the_pool_counts_what_the_profile_did_not_keep(catalog):
    """The warm-up samples min(max_num_seqs, batched tokens) rows after the KV cache is carved; the Triton
    buffer and cuBLAS workspace are already there, so logits, fp32 work and hidden states are new. At
    utilization 1.0 only what the profile freed is left (1.88 GiB less the kept buffers), short of the
    graphs and the warm-up."""
    p = predict(_settings(catalog, utilization=1.0))
    parts = sampler_parts(rules_for("0.19.0"), catalog.model("llama-3.1-8b"), catalog.gpu("h100"), 1024, 1024, 2)
    new = parts.logits + parts.fp32_work + parts.hidden
    assert any(f"the sampler warm-up for 1024 requests (~{gib(new)})" in w for w in p.warnings)
    profile = sampler_parts(rules_for("0.19.0"), catalog.model("llama-3.1-8b"), catalog.gpu("h100"), 8192, 1024, 2)
    freed = p.activation_peak_bytes - profile.topk_buffer - profile.cublas
    assert any(f"at utilization 1.00 {gib(freed)} is left" in w for w in p.warnings)

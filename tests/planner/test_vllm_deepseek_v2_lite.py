"""MLA end to end on a real startup: DeepSeek-V2-Lite-Chat on one H100 at vLLM 0.19.0 (issue 15, term 5).

The figures are those of the llm-d planner accuracy sweep's log (github.com/llm-d-incubation/llm-d-planner at
d3121e059da88662db39a926a3ead964be97359b, accuracy/results/v0.19.0/logs/
deepseek-ai-deepseek-v2---h100-80gb--tp1pp1dp1--8192.log): max_model_len 8192, gpu_memory_utilization 0.95,
"Using FLASH_ATTN_MLA attention backend", "Model loading took 29.43 GiB", "GPU KV cache size: 1,505,552
tokens", "Maximum concurrency for 8,192 tokens per request: 183.78x", num_gpu_blocks 94097."""

import pytest

from gpumem_tui.planner.vllm import EngineSettings, predict
from gpumem_tui.units import GIB

LOG_WEIGHTS_GIB = 29.43
LOG_BLOCKS = 94097
LOG_TOKENS = 1_505_552
LOG_CONCURRENCY = 183.78
PAGE = 16 * (512 + 64) * 2 * 27  # 16 tokens x one 512 + 64 latent x bf16 x 27 layers, per block


def lite(catalog, **kw):
    settings = {"version": "0.19.0", "max_model_len": 8192, "utilization": 0.95, **kw}
    return predict(
        EngineSettings(model=catalog.model("deepseek-ai/DeepSeek-V2-Lite-Chat"), gpu=catalog.gpu("h100"), **settings)
    )


def test_the_log_s_blocks_tokens_and_concurrency_follow_from_its_pool(catalog):
    """Given the pool the log's blocks fill, the 16-token MLA page gives back its blocks, tokens and concurrency."""
    p = lite(catalog, kv_cache_memory_bytes=LOG_BLOCKS * PAGE)
    assert p.block_size == 16
    assert p.num_gpu_blocks == LOG_BLOCKS
    assert p.kv_cache_tokens == LOG_TOKENS
    assert round(p.max_concurrency, 2) == LOG_CONCURRENCY


def test_weights_match_the_log(catalog):
    assert lite(catalog).weights_bytes / GIB == pytest.approx(LOG_WEIGHTS_GIB, rel=0.01)

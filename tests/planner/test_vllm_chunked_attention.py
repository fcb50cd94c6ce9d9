"""vLLM sizing term 5, chunked local attention (Llama 4): its layers form their own KV groups beside the
full-attention ones, as v1/core/kv_cache_utils.py:959-1075 groups them, and each request needs
cdiv(min(chunk + batched tokens, max_model_len), block) pages in each chunked group
(v1/kv_cache_interface.py:229-244 ChunkedLocalAttentionSpec).

The figures are those of the llm-d planner accuracy sweep's log of meta-llama/Llama-4-Scout-17B-16E-Instruct
on 4 x H100 at vLLM 0.19.0 (github.com/llm-d-incubation/llm-d-planner at
d3121e059da88662db39a926a3ead964be97359b, accuracy/results/v0.19.0/logs/
meta-llama-llama-4-scout--h100-80gb--tp4pp1dp1--8192.log): max_model_len 8192, gpu_memory_utilization 0.95,
num_gpu_blocks 91495, "GPU KV cache size: 365,968 tokens", "Maximum concurrency for 8,192 tokens per
request: 44.68x"."""

from gpumem_tui.planner.vllm import EngineSettings, predict

SCOUT = "meta-llama/Llama-4-Scout-17B-16E-Instruct"
LOG_BLOCKS = 91495
LOG_TOKENS = 365_968
LOG_CONCURRENCY = 44.68
LAYER_PAGE = 2 * 16 * (8 // 4) * 128 * 2  # K and V, 16 tokens, 2 of 8 KV heads per rank at TP 4, head 128, bf16


def scout(catalog, version="0.19.0", **kw):
    settings = {"tp": 4, "max_model_len": 8192, "utilization": 0.95, **kw}
    return predict(EngineSettings(model=catalog.model(SCOUT), gpu=catalog.gpu("h100"), version=version, **settings))


def test_the_log_s_blocks_tokens_and_concurrency_follow_from_its_pool(catalog):
    """12 full + 36 chunked layers: four groups of 12 (one full, three chunked), a block is 12 layer-pages;
    tokens are blocks // 4 groups x 16 (0.19's arithmetic); a request needs 512 pages in each group."""
    p = scout(catalog, kv_cache_memory_bytes=LOG_BLOCKS * 12 * LAYER_PAGE)
    assert p.num_gpu_blocks == LOG_BLOCKS
    assert p.kv_cache_tokens == LOG_TOKENS
    assert round(p.max_concurrency, 2) == LOG_CONCURRENCY


def test_a_chunked_group_needs_the_chunk_plus_a_batch_not_the_whole_length(catalog):
    """At max_model_len 32768 a request needs 2048 pages in the full group but min(8192 + 8192, 32768) / 16
    = 1024 in each chunked one."""
    pool = 8192 * 12 * LAYER_PAGE
    p = scout(catalog, max_model_len=32768, kv_cache_memory_bytes=pool)
    assert p.num_gpu_blocks == 8192
    assert p.max_concurrency == 8192 / (2048 + 3 * 1024)


def test_before_0_14_chunked_layers_share_the_full_attention_group(catalog):
    """0.12-0.13 turn the hybrid manager off for chunked attention unless
    VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 (envs.py default "0"; "1" from 0.14), and
    unify_hybrid_kv_cache_specs makes every layer full attention: one group of 48 layers."""
    pool = 1000 * 48 * LAYER_PAGE
    p = scout(catalog, version="0.13.0", kv_cache_memory_bytes=pool)
    assert p.num_gpu_blocks == 1000
    assert p.kv_cache_tokens == 16000


def test_an_unread_release_says_the_chunked_grouping_is_assumed(catalog):
    assert any("chunked" in note and "assumed" in note for note in scout(catalog, version="0.11.0").assumed)
    assert not any("chunked" in note for note in scout(catalog).assumed)


def test_from_0_33_a_chunked_group_keeps_pages_for_two_batches_in_flight(catalog):
    """0.33 sizes a chunked (and a sliding) group's pages per request by max_in_flight_tokens, the batch
    size times max_concurrent_batches: 2 with async scheduling, its default (config/vllm.py:588-609,
    v1/kv_cache_interface.py:864-888): min(8192 + 2 x 8192, 32768) / 16 = 1536 pages per chunked group."""
    pool = 8192 * 12 * LAYER_PAGE
    p = scout(catalog, version="0.33.0", max_model_len=32768, kv_cache_memory_bytes=pool)
    assert p.max_num_batched_tokens == 8192
    assert p.max_concurrency == 8192 / (2048 + 3 * 1536)
    assert not any("in flight" in note for note in p.assumed)
    assert any("in flight" in note for note in scout(catalog, version="0.28.0").assumed)

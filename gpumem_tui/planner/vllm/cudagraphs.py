"""The CUDA-graph memory vLLM estimates before it captures ("Estimated CUDA graph memory: X GiB total").

How 0.19.0 measures it (v1/worker/gpu_model_runner.py:5862-5961): for each capture mode, PIECEWISE then
FULL (v1/cudagraph_dispatcher.py:325-349), it captures the two largest batch sizes into one shared pool;
the first capture's growth is that mode's shared cost, the second's is taken as the cost of every further
graph. The total is the largest first capture plus (graphs - 1) x the per-graph cost, summed over modes
(:5950-5954). So the estimate is decided by how many sizes are captured, in which modes, what the largest
FULL capture allocates, and what each graph costs; each is one function below.
"""

from __future__ import annotations

from gpumem_tui.catalog.schema import GpuSpec, ModelSpec
from gpumem_tui.planner.vllm.versions import Rules
from gpumem_tui.units import MIB

FULL_SPLITS = 32
"""FlashAttention 3 split-KV pieces a FULL graph is captured with
(`flash_attn_max_num_splits_for_cuda_graph`, config/attention.py:27 at 0.19.0)."""
GPT_OSS_LARGEST = 1024  # gpt-oss raises the largest capture size (model_executor/models/config.py:113-133)
GRAPH_BYTES_PER_LAYER = round(0.17 * MIB)
"""What one more captured graph costs per decoder layer in one mode: its kernel nodes, since it shares the
first capture's pool (gpu_model_runner.py:5886-5891 at 0.19.0). The mean of 36 v0.19.0 H100 logs and six
llm-d DEV logs; vLLM measures it in 2 MiB pages, so about 0.1 GiB per mode: docs/design/vllm-cuda-graphs.md."""
LAYER_TENTHS = 10
"""A layer's weight in tenths of GRAPH_BYTES_PER_LAYER: a dense layer, ten tenths; the extras below add to it."""
MOE_TENTHS = 3
"""A routed-expert layer launches more kernels than a dense MLP (router, top-k, block alignment, the two
grouped GEMMs and the sum, fused_moe/fused_moe.py at 0.19.0): Qwen3-30B-A3B's 48 such layers logged 10 MiB
per graph in each mode where 40-46 dense layers logged 4-10."""
SHARED_EXPERT_TENTHS = 10
"""A shared expert is a second MLP in the layer (its own GEMMs): DeepSeek-V2-Lite's 27 layers logged 10 and
8 MiB per graph, Llama 4 Scout's 48 at TP 4 20 MiB."""
ALL_REDUCE_TENTHS = 2
"""With TP above 1 each layer adds its two all-reduces (after attention and after the MLP): Qwen2.5-7B at
TP 1 logged 4 + 4 MiB per graph, at TP 2 4 + 6 and at TP 4 6 + 6."""
FIRST_CAPTURE_BYTES = 64 * MIB
"""What the first PIECEWISE capture adds besides the pieces' activations and the graph itself (the capture
stream's own cuBLAS workspaces, 32 MiB each on Hopper): the six DEV logs leave 35-80 MiB."""


def capture_sizes(
    rules: Rules, spec: ModelSpec, gpu: GpuSpec, max_num_seqs: int, max_num_batched_tokens: int
) -> list[int]:
    """The batch sizes vLLM captures by default (config/vllm.py:1386-1444 at 0.19.0): 1, 2, 4, then every 8
    below 256, then every 16, up to min(2 x max_num_seqs, 512) (or the model's own largest), capped at
    max_num_batched_tokens; later releases add the batched tokens and max_num_seqs as sizes (see `Rules`)."""
    top = min(
        max_num_batched_tokens, largest_capture(spec) or min(2 * max_num_seqs, rules.largest_capture(gpu.cc_major))
    )
    sizes = {size for size in (1, 2, 4) if size <= top}
    sizes.update(range(8, min(top + 1, 256), 8))
    sizes.update(range(256, top + 1, 16))
    if rules.captures_batched_tokens and max_num_batched_tokens <= top:
        sizes.add(max_num_batched_tokens)
    if rules.captures_max_num_seqs and max_num_seqs <= top:
        sizes.add(max_num_seqs)
    return sorted(sizes)


def largest_capture(spec: ModelSpec) -> int | None:
    """The model's own largest capture size where its config class sets one (gpt-oss: 1024)."""
    return GPT_OSS_LARGEST if spec.architecture.startswith("GptOss") else None


def full_graphs(spec: ModelSpec) -> bool:
    """Whether FULL graphs are captured beside PIECEWISE (the default FULL_AND_PIECEWISE). Chunked local
    attention layers (Llama 4's `attention_chunk_size`, `spec.chunked_attention`) support none
    (model_executor/layers/attention/chunked_local_attention.py:41-48), so vLLM falls back to PIECEWISE only
    (v1/worker/gpu_model_runner.py:6310-6330)."""
    return spec.chunked_attention is None


MM_PREFIX_TYPES = ("bagel", "gemma3", "molmo2", "paligemma")
"""The model types whose image tokens attend both ways (`is_mm_prefix_lm`, config/model.py:1194-1208 at
0.19.0); only Triton attention takes that prefix (platforms/cuda.py:195), so FlashAttention is not used."""


def image_prefix(spec: ModelSpec) -> bool:
    """Whether the model is one of MM_PREFIX_TYPES with its vision tower: its class name (or, where a
    config.json names no class, its model_type, which the reader takes instead) starts with one of them and
    it has a tower (`spec.vision`); Gemma 3's text-only checkpoints (gemma3_text) attend causally."""
    return spec.vision is not None and spec.architecture.lower().startswith(MM_PREFIX_TYPES)


def flash_splits(spec: ModelSpec, gpu: GpuSpec) -> bool:
    """Whether FULL graphs run FlashAttention 3 with forced splits: Hopper only (vLLM forces the split count
    where FA3 runs, v1/attention/backends/flash_attn.py:326-346 and :391-401; FA3 is Hopper's,
    v1/attention/backends/fa_utils.py:74-83), not for bidirectional-prefix multimodal models (`image_prefix`).
    Models with attention sinks (gpt-oss) showed none in their DEV log (8 MiB first FULL capture), so none
    is counted for them."""
    return gpu.cc_major == 9 and not image_prefix(spec) and not spec.attention_sinks


def full_sizes(sizes: list[int], max_num_seqs: int) -> list[int]:
    """FULL graphs are uniform decode batches: the capture sizes up to max_num_seqs
    (v1/cudagraph_dispatcher.py:205-229)."""
    return [size for size in sizes if size <= max_num_seqs]


def split_buffers(spec: ModelSpec, gpu: GpuSpec, batch: int, tp: int) -> int:
    """The FlashAttention 3 split-KV buffers the largest FULL graph allocates (see `flash_splits`):
    FULL_SPLITS x batch x query heads per rank x (V head dim + 1) in fp32, out_accum and softmax_lse_accum
    (FA3's mha_fwd, hopper/flash_api.cpp). MLA decodes the absorbed latent, so its V width is kv_lora_rank
    (v1/attention/backends/mla/flashattn_mla.py:148-176)."""
    if not flash_splits(spec, gpu):
        return 0
    width = spec.mla.kv_lora_rank if spec.mla else spec.head_size
    heads = max(1, spec.attention_heads // tp)
    return FULL_SPLITS * batch * heads * (width + 1) * 4


def per_graph_bytes(spec: ModelSpec, stage_layers: int, tp: int) -> int:
    """One more graph in one mode: GRAPH_BYTES_PER_LAYER per layer, weighed by the kernels the layer
    launches (a routed-expert layer, a shared expert, TP's all-reduces)."""
    moe_layers = spec.moe_layer_count() * stage_layers // spec.layers if spec.moe else 0
    shared = 0
    if spec.moe and (spec.moe.shared_experts or spec.moe.shared_expert_intermediate_size):
        shared = moe_layers
    tenths = LAYER_TENTHS * stage_layers + MOE_TENTHS * moe_layers + SHARED_EXPERT_TENTHS * shared
    if tp > 1:
        tenths += ALL_REDUCE_TENTHS * stage_layers
    return GRAPH_BYTES_PER_LAYER * tenths // LAYER_TENTHS


def first_piecewise_bytes(spec: ModelSpec, batch: int, width: int, tp: int, stage_layers: int) -> int:
    """The first PIECEWISE capture: the widest piece's activations at the largest size (gate/up output,
    activation, hidden copies), one graph, and FIRST_CAPTURE_BYTES."""
    mlp = spec.moe.expert_intermediate_size * spec.moe.experts_per_token if spec.moe else spec.intermediate_size
    activations = batch * width * (3 * mlp // tp + 3 * spec.hidden_size)
    return activations + per_graph_bytes(spec, stage_layers, tp) + FIRST_CAPTURE_BYTES


def estimate_bytes(
    rules: Rules,
    spec: ModelSpec,
    gpu: GpuSpec,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    width: int,
    tp: int,
    stage_layers: int,
) -> int:
    """The logged estimate: the larger first capture plus (graphs - 1) x per-graph cost in each mode
    (v1/worker/gpu_model_runner.py:5921-5954 at 0.19.0)."""
    sizes = capture_sizes(rules, spec, gpu, max_num_seqs, max_num_batched_tokens)
    per_graph = per_graph_bytes(spec, stage_layers, tp)
    firsts = [first_piecewise_bytes(spec, sizes[-1], width, tp, stage_layers)]
    total = (len(sizes) - 1) * per_graph
    decode = full_sizes(sizes, max_num_seqs) if full_graphs(spec) else []
    if decode:
        firsts.append(split_buffers(spec, gpu, decode[-1], tp) + per_graph)
        total += (len(decode) - 1) * per_graph
    return max(firsts) + total


def assumed_note(gpu: GpuSpec) -> str | None:
    """The line that says what the estimate assumes off Hopper: per-graph figures measured on H100, and no
    split buffers where the GPU generation is unknown."""
    if gpu.cc_major == 9:
        return None
    if gpu.cc_major is None:
        return "CUDA-graph estimate assumed: the GPU's generation is not known, so no FlashAttention 3 split buffers"
    return f"CUDA-graph estimate assumed: its per-graph figures were measured on H100, not {gpu.key}"

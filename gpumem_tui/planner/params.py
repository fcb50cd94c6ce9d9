"""Parameter counts computed from a model's architecture, split by the kind of tensor they live in."""

from __future__ import annotations

from dataclasses import dataclass

from gpumem_tui.catalog.schema import ModelSpec


@dataclass(frozen=True)
class ParamCounts:
    """Parameters by kind; `total` counts tied embeddings once, `active` is what one token uses."""

    embedding: int
    lm_head: int
    attention: int
    kv_projection: int
    """The K and V projections inside `attention` (they replicate when a split exceeds the KV heads)."""
    dense_mlp: int
    experts: int
    """Routed expert weight matrices (what MXFP4 converts); their biases are in `expert_biases`."""
    expert_biases: int
    shared_experts: int
    router: int
    norms: int
    active: int

    @property
    def total(self) -> int:
        return (
            self.embedding
            + self.lm_head
            + self.attention
            + self.dense_mlp
            + self.experts
            + self.expert_biases
            + self.shared_experts
            + self.router
            + self.norms
        )

    @property
    def linear(self) -> int:
        """Weights of linear layers: what weight-only quantizers (GPTQ, AWQ, NF4) convert."""
        return self.attention + self.dense_mlp + self.experts + self.shared_experts


def count_params(spec: ModelSpec) -> ParamCounts:
    """Exact counts: embeddings, attention (GQA/MHA/MLA, biases, sinks, qk-norms), MLP or experts, norms."""
    hidden, layers = spec.hidden_size, spec.layers
    attention, kv_proj = _attention_per_layer(spec)
    moe = spec.moe
    moe_layers = spec.moe_layer_count()
    dense_layers = layers - moe_layers
    per_expert = 0 if moe is None else 3 * hidden * moe.expert_intermediate_size
    per_expert_bias = 2 * moe.expert_intermediate_size + hidden if moe and moe.expert_bias else 0
    experts = 0 if moe is None else moe_layers * moe.experts * per_expert
    expert_biases = 0 if moe is None else moe_layers * moe.experts * per_expert_bias
    shared, shared_gate = _shared_expert_params(spec)
    router = 0 if moe is None else moe_layers * (hidden * moe.experts + (moe.experts if moe.router_bias else 0))
    router += moe_layers * shared_gate
    embedding = spec.vocab_size * hidden
    counts = ParamCounts(
        embedding=embedding,
        lm_head=0 if spec.tie_word_embeddings else embedding,
        attention=layers * attention,
        kv_projection=layers * kv_proj,
        dense_mlp=dense_layers * 3 * hidden * spec.intermediate_size,
        experts=experts,
        expert_biases=expert_biases,
        shared_experts=shared,
        router=router,
        norms=layers * spec.norms_per_layer * hidden + hidden,
        active=0,
    )
    idle_experts = (
        0 if moe is None else moe_layers * (moe.experts - moe.experts_per_token) * (per_expert + per_expert_bias)
    )
    return ParamCounts(**{**counts.__dict__, "active": counts.total - idle_experts})


def _shared_expert_params(spec: ModelSpec) -> tuple[int, int]:
    """(all shared-expert weights, the shared-expert gate of one MoE layer). A shared expert is a gated MLP
    (3 x hidden x width) that every token runs; its width is its own where config.json gives one.
    vLLM 0.19.0: qwen2_moe.py:143-162 (one Qwen2MoeMLP of shared_expert_intermediate_size, gated by
    ReplicatedLinear(hidden, 1), built even when the width is 0), llama4.py:96-112 (one LlamaMLP of
    intermediate_size), deepseek_v2.py:293-305 (n_shared_experts x moe_intermediate_size)."""
    moe = spec.moe
    if moe is None:
        return 0, 0
    width = moe.shared_expert_intermediate_size or moe.expert_intermediate_size
    per_layer = moe.shared_experts * 3 * spec.hidden_size * width
    return spec.moe_layer_count() * per_layer, spec.hidden_size if moe.shared_expert_gate else 0


def _attention_per_layer(spec: ModelSpec) -> tuple[int, int]:
    """(all attention parameters of one layer, of which the K/V projections)."""
    hidden, heads = spec.hidden_size, spec.attention_heads
    if spec.mla is not None:
        mla = spec.mla
        qk_head = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        if mla.q_lora_rank:
            query = hidden * mla.q_lora_rank + mla.q_lora_rank + mla.q_lora_rank * heads * qk_head
        else:
            query = hidden * heads * qk_head
        kv_a = hidden * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank
        kv_b = mla.kv_lora_rank * heads * (mla.qk_nope_head_dim + mla.v_head_dim)
        out = heads * mla.v_head_dim * hidden
        return query + kv_a + kv_b + out, kv_a + kv_b
    head = spec.head_size
    q_width, kv_width = heads * head, spec.kv_heads * head
    kv_proj = 2 * hidden * kv_width + (2 * kv_width if spec.qkv_bias else 0)
    total = hidden * q_width + q_width * hidden + kv_proj
    total += q_width if spec.qkv_bias else 0
    total += hidden if spec.attention_out_bias else 0
    total += heads if spec.attention_sinks else 0
    total += 2 * head if spec.qk_norm else 0
    return total, kv_proj

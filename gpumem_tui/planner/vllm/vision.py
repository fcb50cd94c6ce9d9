"""A multimodal checkpoint as vLLM 0.19.0 loads and profiles it: the vision tower in the weights, and the
encoder's dummy images alive through the activation peak; with them, the RoPE caches a model builds while
loading. `--limit-mm-per-prompt` (read here) decides whether the tower is there at all."""

from __future__ import annotations

import ast
import json
import math

from gpumem_tui.catalog.schema import ModelSpec
from gpumem_tui.planner.dtypes import PlanInputError
from gpumem_tui.planner.vllm.versions import Rules
from gpumem_tui.text import literal

FLAG = "--limit-mm-per-prompt"
MAX_ITEMS = 10**6
READ_FROM = (0, 12, 0)
"""The releases whose tower, RoPE and encoder-profile code was read: 0.12.0 to 0.33.0."""
NO_MODALITIES = {"image": 0, "video": 0, "audio": 0}
"""`--language-model-only`: every modality limited to 0 (config/multimodal.py:79-80, 259-265)."""


def mm_limits(text: str) -> dict[str, int]:
    """The flag's value as counts per modality. vLLM 0.19.0 takes JSON (engine/arg_utils.py:336), each
    modality a count or an object with a `count` (config/multimodal.py:182-205); a log's non-default args
    print the same dict in Python's spelling. Anything else is a PlanInputError naming the flag."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            raise PlanInputError(f"{FLAG} needs JSON like '{{\"image\": 0}}', not {text[:60]!r}") from None
    if not isinstance(parsed, dict):
        raise PlanInputError(f"{FLAG} needs a JSON object of counts per modality, like '{{\"image\": 0}}'")
    return {str(key): _count(str(key), value) for key, value in parsed.items()}


def limits_from_flags(flags: dict[str, str]) -> dict[str, int] | None:
    """The limits an engine's command line sets: `--language-model-only`, the JSON flag, and its dotted
    form (`--limit-mm-per-prompt.image 0`, `--limit-mm-per-prompt.image.count 0`) over it, as vLLM's parser
    merges them (utils/argparse_utils.py:271-344). None when the command line sets none."""
    if flags.get("--language-model-only") == "true":
        return dict(NO_MODALITIES)
    found = mm_limits(flags[FLAG]) if FLAG in flags else None
    for name, value in flags.items():
        if name.startswith(FLAG + "."):
            modality = name[len(FLAG) + 1 :].removesuffix(".count")
            found = {**(found or {}), **mm_limits(json.dumps({modality: _whole(value)}))}
    return found


def _whole(text: str) -> object:
    try:
        return int(text)
    except ValueError:
        return text


def _count(modality: str, value: object) -> int:
    if isinstance(value, dict):
        value = value.get("count", 999)  # config/multimodal.py:19: an object without a count allows 999
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ITEMS:
        raise PlanInputError(f"{FLAG}: {modality!r} needs a whole count from 0 to {MAX_ITEMS:,}, not {value!r}")
    return value


def wanted(spec: ModelSpec, limits: dict[str, int] | None) -> bool:
    """Some modality the tower serves allows an item; an unnamed modality allows 999
    (config/multimodal.py:259-273)."""
    if spec.vision is None:
        return False
    return any((limits or {}).get(modality, 999) > 0 for modality in spec.vision.modalities)


def tower_loaded(spec: ModelSpec, limits: dict[str, int] | None, rules: Rules) -> bool:
    """From 0.15 the tower is built unless every modality it serves is limited to 0 (models/interfaces.py:
    249-288; gemma3_mm.py:515-521 marks its tower); before, it is built whatever the limits."""
    return spec.vision is not None and (wanted(spec, limits) or not rules.skips_unused_towers)


def vision_tower_bytes(spec: ModelSpec, width: int, limits: dict[str, int] | None, rules: Rules) -> int:
    """Tower and projector weights, in the model dtype, before any TP split (0 when skipped or unknown).
    "Weights" is torch's allocation across `load_model` (v1/worker/gpu_model_runner.py:4746-4808), and
    gemma3_mm.py:515-521 builds the SigLIP tower and projector inside it."""
    if spec.vision is None or spec.vision.params is None or not tower_loaded(spec, limits, rules):
        return 0
    return spec.vision.params * width


# Models that build their RoPE cache in fp32 whatever the serving dtype (vLLM 0.19.0 models/gpt_oss.py:82-85).
FP32_ROPE_ARCHITECTURES = {"GptOssForCausalLM"}


def rope_cache_bytes(spec: ModelSpec, width: int) -> int:
    """The cos/sin caches, in the model dtype: one per distinct RoPE (get_rope keeps one per parameter set),
    each max position x its linear factor rows of the rotary width
    (layers/rotary_embedding/linear_scaling_rope.py:79-109, base.py:58-63). Gemma 3 builds a x8 cache for
    its global layers and a plain one for its local layers (models/gemma3.py:167-186). gpt-oss builds its
    cache in fp32."""
    rotary = spec.mla.qk_rope_head_dim if spec.mla else spec.head_size
    if spec.architecture in FP32_ROPE_ARCHITECTURES:
        width = 4
    rows = sum(math.floor((spec.max_context or 0) * factor) for factor in spec.rope_caches)
    return rows * rotary * width


def encoder_items(spec: ModelSpec, batched_tokens: int) -> int:
    """Dummy images the profile encodes: the encoder budget (the batched tokens, at least one item) over the
    tokens one image becomes (multimodal/encoder_budget.py:153-178, v1/core/encoder_cache_manager.py:309-314)."""
    per_item = spec.vision.tokens_per_image if spec.vision else None
    if per_item is None:
        return 0
    return max(1, max(batched_tokens, per_item) // per_item)


def encoder_profile_bytes(spec: ModelSpec, batched_tokens: int, width: int, limits: dict[str, int] | None) -> int:
    """What the encoder profile keeps alive through the LM dummy run and the sampler: the dummy images'
    pixel values (cast to the model dtype, multimodal/processing/context.py:226-233) and the encoder's
    outputs, one LM-hidden row per image token, held in the encoder cache until the profile ends
    (v1/worker/gpu_model_runner.py:5734-5794); and a table the encoder builds on that first run and keeps
    (MoonViT's RoPE table: models/moonvit.py:217-245, a cached property on the GPU)."""
    vision = spec.vision
    if vision is None or vision.pixels_per_image is None or vision.tokens_per_image is None:
        return 0
    if not wanted(spec, limits):  # all limits 0: no encoder budget, nothing profiled (encoder_cache_manager.py:288-294)
        return 0
    per_item = vision.pixels_per_image + vision.tokens_per_image * spec.hidden_size
    return encoder_items(spec, batched_tokens) * per_item * width + vision.encoder_buffer_bytes


def vision_terms(
    spec: ModelSpec, batched_tokens: int, width: int, tp: int, limits: dict[str, int] | None, rules: Rules
) -> dict[str, int]:
    """The named terms one rank carries: the tower (its linear layers split over TP unless the encoder runs
    data-parallel, siglip.py:382-468; the parts the entry says are replicated whole on each rank), the RoPE
    caches where they are more than one plain cache, and the encoder's dummy inputs (V1's profile run only)."""
    terms = {}
    tower = vision_tower_bytes(spec, width, limits, rules)
    if tower and spec.vision is not None:
        whole = spec.vision.replicated_params * width
        terms["vision_tower"] = math.ceil((tower - whole) / tp) + whole
    if spec.rope_caches != [1.0] and spec.max_context:
        terms["rope_cache"] = rope_cache_bytes(spec, width)
    encoder = encoder_profile_bytes(spec, batched_tokens, width, limits) if rules.v1 else 0
    if encoder:
        terms["encoder_profile"] = encoder
    return terms


def vision_notes(spec: ModelSpec, rules: Rules, tp: int, limits: dict[str, int] | None) -> list[str]:
    """What the source read does not decide for this prediction, each said as assumed."""
    if spec.vision is None or not tower_loaded(spec, limits, rules):
        return []
    notes = []
    if spec.vision.params is None:
        notes.append(f"{literal(spec.id)}'s vision tower is not counted: the catalog does not know its size")
    if rules.v1 and (spec.vision.tokens_per_image is None or spec.vision.pixels_per_image is None):
        notes.append(f"{literal(spec.id)}'s encoder dummy inputs are not counted: its image size is not known")
    if rules.version < READ_FROM:
        notes.append("vision tower loaded and its encoder profiled as vLLM 0.12-0.33 do (this release not read)")
    if tp > 1 and not spec.vision.replicated_params:
        notes.append(f"vision tower split evenly over the {tp} TP ranks (its norms and embeddings are whole on each)")
    return notes

"""Turn a Hugging Face config.json (a file, a model directory, or an id in the local HF cache) into a
ModelSpec, offline. Known architectures are read exactly; others get a best effort and a warning."""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import os
import re
from pathlib import Path

from pydantic import ValidationError

from gpumem_tui.catalog.jsonfile import read_json
from gpumem_tui.catalog.loader import CatalogError, first_error
from gpumem_tui.catalog.schema import (
    ChunkedAttentionSpec,
    MlaSpec,
    ModelSpec,
    MoeSpec,
    RopeScalingSpec,
    SlidingWindowSpec,
    VisionSpec,
)

_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
KNOWN_MODEL_TYPES = {
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "qwen2_moe",
    "llama4",
    "llama4_text",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "deepseek_v2",
    "deepseek_v3",
    "gpt_oss",
    "phi3",
    "granite",
}
TEXT_KINDS = {"kimi_vl": "deepseek_v2"}
"""A multimodal config whose text_config may omit its model_type: the kind vLLM builds it as (Kimi-VL's
text_config becomes transformers' DeepseekV2Config: vLLM 0.19.0 transformers_utils/configs/kimi_vl.py:31-34)."""
# transformers' Gemma 3 text defaults: the official config lists only keys that differ from these.
_GEMMA3_DEFAULTS = {
    "vocab_size": 262208,
    "max_position_embeddings": 131072,
    "head_dim": 256,
    "sliding_window": 4096,
    "sliding_window_pattern": 6,
    "tie_word_embeddings": True,
}
_QUANT_FORMATS = {"fp8": "fp8", "mxfp4": "mxfp4", "gptq": "gptq", "awq": "awq"}
"""A checkpoint's quant_method as the format it ships in: GPTQ and AWQ by their vLLM method, which sizes
their group scales (and AWQ's zero points) at the config's group size as vLLM and SGLang load them; from
compute capability 7.5 (Marlin's least, marlin_utils.py:56 at vLLM 0.19.0) both engines run them as
gptq_marlin / awq_marlin, which hold the same bytes."""


MAX_CONFIG_BYTES = 4 * 2**20
"""A config.json is a few kilobytes; a file over this is not one, and is never read whole."""
_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
"""`org/name` as the Hugging Face Hub spells a repository id: one slash, no path beyond it."""


def find_config(ref: str) -> Path:
    """A config.json the user named: a file, a directory, or an `org/name` id in the local HF cache.
    Only for what the user typed: a name from outside (an engine, a recording) goes to `find_cached`."""
    path = Path(ref).expanduser()
    try:
        if path.is_file():
            return path
        if path.is_dir():
            if (path / "config.json").is_file():
                return path / "config.json"
            raise CatalogError(f"{path}: no config.json in this directory")
        if path.exists():  # a device, a pipe, a socket: never read
            raise CatalogError(f"{path}: not a regular file or a directory")
    except OSError as exc:
        raise CatalogError(f"{ref}: cannot look there: {exc.strerror or exc}") from None
    found = find_cached(ref)
    if found is None:
        raise CatalogError(f"{ref}: no such file, and not in the local Hugging Face cache (nothing is downloaded)")
    return found


def is_repo_id(name: str) -> bool:
    """True for a plausible Hugging Face repository id (`org/name`); a path or anything else is not one."""
    return _REPO_ID.fullmatch(name) is not None and ".." not in name


def find_cached(model_id: str) -> Path | None:
    """The newest config.json of a repository id in the local HF cache, by id only: a name that is not an
    `org/name` id (a path, a URL, text from an engine) is never turned into a path and is not found."""
    if not is_repo_id(model_id):
        return None
    for hub in _hub_dirs():
        snapshots = hub / f"models--{model_id.replace('/', '--')}" / "snapshots"
        try:
            found = _newest_config(snapshots, snapshots.stat().st_mtime_ns)
        except OSError:
            continue
        if found:
            return found
    return None


@functools.lru_cache(maxsize=256)
def _newest_config(snapshots: Path, mtime_ns: int) -> Path | None:  # noqa: ARG001 (the cache's key)
    """The newest snapshot's config.json, listed once per version of the snapshots folder: the app plans
    every sample, and a new snapshot (a download) changes the folder's modification time."""
    found = sorted(snapshots.glob("*/config.json"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def _hub_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("HF_HUB_CACHE"):
        dirs.append(Path(os.environ["HF_HUB_CACHE"]))
    if os.environ.get("HF_HOME"):
        dirs.append(Path(os.environ["HF_HOME"]) / "hub")
    with contextlib.suppress(RuntimeError, KeyError):  # no home directory for this user (a service account)
        dirs.append(Path.home() / ".cache" / "huggingface" / "hub")
    return dirs


def load_config(path: Path) -> dict:
    """The JSON object a config.json holds, read at most once per version of the file (path, size and
    modification time), refused over MAX_CONFIG_BYTES or when it is not plain JSON."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read config.json: {exc.strerror or exc}") from None
    return copy.deepcopy(_parsed(path, stat.st_size, stat.st_mtime_ns))


@functools.lru_cache(maxsize=32)
def _parsed(path: Path, size: int, mtime_ns: int) -> dict:  # noqa: ARG001 (mtime_ns keys the cache: an edit reads again)
    if size > MAX_CONFIG_BYTES:
        raise CatalogError(f"{path}: {size:,} bytes is too large for a config.json (at most {MAX_CONFIG_BYTES:,})")
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read config.json: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise CatalogError(f"{path}: grew past {MAX_CONFIG_BYTES:,} bytes while read; not a config.json")
    data = read_json(raw, f"{path}: config.json")
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: config.json is not a JSON object")
    return data


def model_from_config(config: dict, model_id: str, where: str | None = None) -> tuple[ModelSpec, list[str]]:
    """The architecture a config.json describes, and warnings naming whatever had to be guessed; `where`:
    the file, for errors (else the model's id).
    A value of the wrong kind or out of range (text, NaN, 2048.5, a list where a number belongs, more
    layers than any real model) is a CatalogError naming it."""
    try:
        return _read_config(config, model_id)
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
        if isinstance(exc, ValidationError):
            what = first_error(exc)
        elif isinstance(exc, CatalogError):
            what = str(exc)
        else:
            what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise CatalogError(f"{where or f'config.json for {model_id}'}: cannot read it ({what})") from None


def _section(config: dict, key: str) -> dict | None:
    """A nested object of config.json (text_config, vision_config, rope_scaling); None when absent or null.
    Any other kind is an error naming it: ignored, a tower or a RoPE factor would go uncounted."""
    value = config.get(key)
    if value is None or isinstance(value, dict):
        return value
    raise CatalogError(f"{key} is {type(value).__name__}, not an object")


def _read_config(config: dict, model_id: str) -> tuple[ModelSpec, list[str]]:
    outer, outer_type = config, str(config.get("model_type", ""))
    text = _section(config, "text_config")
    if text is not None:
        text_kind = TEXT_KINDS.get(outer_type, outer_type)
        config = {"model_type": text_kind, **text, "architectures": config.get("architectures")}
    kind = str(config.get("model_type") or outer_type)
    defaults = _defaults_for(kind)
    warnings = [
        f"{key} not in config.json: using transformers' default {value}"
        for key, value in defaults.items()
        if key not in config and key in ("vocab_size", "head_dim")
    ]
    config = {**defaults, **config}
    if kind not in KNOWN_MODEL_TYPES:
        warnings.append(
            f"unknown architecture {kind or '(no model_type)'!r}: read the common keys as a Llama-style decoder"
        )
    fields = _common(config, warnings)
    fields.update(_specifics(kind, config, warnings))
    fields["sliding_window"] = _window(kind, config)
    fields["rope_caches"] = _rope_caches(kind, config)
    fields["rope_scaling"] = _rope_scaling(config)
    fields["vision"] = _vision(outer, fields["hidden_size"], warnings)
    fields["chunked_attention"] = _chunks(kind, config)
    spec = ModelSpec(id=model_id, aliases=[], architecture=_architecture(config, kind), **fields)
    return spec, warnings


def _defaults_for(kind: str) -> dict:
    return dict(_GEMMA3_DEFAULTS) if kind in ("gemma3", "gemma3_text") else {}


def _architecture(config: dict, kind: str) -> str:
    names = config.get("architectures") or []
    return str(names[0]) if names else kind or "unknown"


def _common(config: dict, warnings: list[str]) -> dict:
    def need(key: str, *alts: str):
        for name in (key, *alts):
            if config.get(name) is not None:
                return config[name]
        raise CatalogError(f"no {key!r}; cannot size this model")

    heads = whole("num_attention_heads", need("num_attention_heads", "n_head", "num_heads"))
    kv_heads = config.get("num_key_value_heads")
    if kv_heads is None:
        kv_heads = heads
        warnings.append(f"no num_key_value_heads: assumed {heads} (one per attention head, no GQA)")
    dtype = config.get("torch_dtype") or config.get("dtype")
    return {
        "layers": whole("num_hidden_layers", need("num_hidden_layers", "n_layer", "num_layers")),
        "hidden_size": whole("hidden_size", need("hidden_size", "n_embd", "d_model")),
        "intermediate_size": whole("intermediate_size", need("intermediate_size", "ffn_dim", "n_inner")),
        "attention_heads": heads,
        "kv_heads": whole("num_key_value_heads", kv_heads),
        "head_dim": whole("head_dim", config.get("head_dim")),
        "vocab_size": whole("vocab_size", need("vocab_size")),
        "tie_word_embeddings": bool(config.get("tie_word_embeddings", False)),
        "native_dtype": _DTYPES.get(str(dtype)) if isinstance(dtype, str) else None,
        "max_context": whole("max_position_embeddings", config.get("max_position_embeddings")),
        "qkv_bias": bool(config.get("attention_bias", False)),
        "attention_out_bias": False,
        "checkpoint_format": (method := _checkpoint_format(config, warnings)),
        "quant_group_size": _group_size(config, method, warnings),
    }


def _specifics(kind: str, config: dict, warnings: list[str]) -> dict:
    extra: dict = {}
    if kind in ("qwen2", "qwen2_moe"):  # vLLM qwen2_moe.py:233-241: QKVParallelLinear(bias=True)
        extra["qkv_bias"] = True
    if kind in ("llama4", "llama4_text") and config.get("intermediate_size_mlp") is not None:
        # vLLM llama4.py:356-363: the dense layers' MLP is intermediate_size_mlp wide; intermediate_size is
        # the experts' width.
        extra["intermediate_size"] = whole("intermediate_size_mlp", config["intermediate_size_mlp"])
    if kind in ("qwen3", "qwen3_moe", "gemma3", "gemma3_text"):
        extra["qk_norm"] = True
    if kind.startswith("gemma"):
        extra.update(norms_per_layer=4, tie_word_embeddings=bool(config.get("tie_word_embeddings", True)))
    if kind == "gpt_oss":
        extra.update(qkv_bias=True, attention_out_bias=True, attention_sinks=True, native_dtype="bf16")
    if kind in ("deepseek_v2", "deepseek_v3"):
        ranks = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
        extra["mla"] = MlaSpec(**{key: whole(key, config.get(key)) for key in ranks})
    extra["moe"] = _moe(kind, config, warnings)
    return extra


def _moe(kind: str, config: dict, warnings: list[str]) -> MoeSpec | None:
    experts = config.get("n_routed_experts") or config.get("num_local_experts") or config.get("num_experts")
    if not experts:
        return None
    per_token = config.get("num_experts_per_tok") or config.get("experts_per_token") or 1
    size = config.get("moe_intermediate_size") or config["intermediate_size"]
    shared: dict | None = {"shared_experts": whole("n_shared_experts", config.get("n_shared_experts") or 0)}
    if kind == "qwen2_moe":
        shared = _qwen2_moe_shared(config, warnings)
    elif kind in ("llama4", "llama4_text"):
        shared = _llama4_shared(config)
    if shared is None:
        return None
    return MoeSpec(
        experts=whole("experts", experts),
        experts_per_token=whole("num_experts_per_tok", per_token),
        expert_intermediate_size=whole("moe_intermediate_size", size),
        first_dense_layers=whole("first_k_dense_replace", config.get("first_k_dense_replace") or 0),
        router_bias=kind == "gpt_oss" or config.get("topk_method") == "noaux_tc",
        expert_bias=kind == "gpt_oss",
        **shared,
    )


def _qwen2_moe_shared(config: dict, warnings: list[str]) -> dict:
    """Qwen2-MoE's shared expert: one MLP of `shared_expert_intermediate_size` (none when 0) behind a
    hidden -> 1 gate that is built either way; a layer has experts when (index + 1) % decoder_sparse_step
    == 0 and it is not in mlp_only_layers. vLLM 0.19.0 model_executor/models/qwen2_moe.py:143-162, 313-321."""
    width = whole("shared_expert_intermediate_size", config.get("shared_expert_intermediate_size") or 0) or 0
    if config.get("mlp_only_layers"):
        warnings.append("mlp_only_layers not read: those layers are counted with experts")
    step = whole("decoder_sparse_step", config.get("decoder_sparse_step", 1)) or 0
    if step < 1:
        raise CatalogError(f"decoder_sparse_step is {step}; vLLM needs a positive step")
    return {
        "shared_experts": 1 if width else 0,
        "shared_expert_intermediate_size": width or None,
        "shared_expert_gate": True,
        "moe_every": step,
    }


def _llama4_shared(config: dict) -> dict | None:
    """Llama 4's MoE layers: one shared expert as wide as a routed one (`intermediate_size`); a layer has
    experts when (index + 1) % interleave_moe_layer_step == 0, none when the step is below 1, and the
    others are dense. vLLM 0.19.0 model_executor/models/llama4.py:96-125, 347-363."""
    step = whole("interleave_moe_layer_step", config.get("interleave_moe_layer_step", 1)) or 0
    return {"shared_experts": 1, "moe_every": step} if step >= 1 else None


def _window(kind: str, config: dict) -> SlidingWindowSpec | None:
    """Only architectures whose engines trim window layers; Mistral/Phi-3 windows are left as full
    attention (whether they are enforced depends on the engine) and Qwen's are off."""
    size = config.get("sliding_window")
    if not size or kind not in ("gemma2", "gemma3", "gemma3_text", "gpt_oss"):
        return None
    types = config.get("layer_types")
    if isinstance(types, list) and "full_attention" in types:
        every: int | None = types.index("full_attention") + 1
    elif kind in ("gemma3", "gemma3_text"):
        every = whole("sliding_window_pattern", config.get("sliding_window_pattern") or 6)
    else:
        every = 2
    return SlidingWindowSpec(size=positive("sliding_window", size), global_every=every)


def _rope_caches(kind: str, config: dict) -> list[float]:
    """The RoPE caches vLLM builds, as linear factors: a `linear` rope_scaling scales the cache's positions
    (layers/rotary_embedding/linear_scaling_rope.py:79-109); Gemma 3's local layers add a plain one of their
    own base (vLLM 0.19.0 models/gemma3.py:167-186)."""
    scaling = _section(config, "rope_scaling") or {}
    linear = (scaling.get("rope_type") or scaling.get("type")) == "linear"
    factor = _factor(scaling.get("factor", 1.0)) if linear else 1.0
    return [factor, 1.0] if kind in ("gemma3", "gemma3_text") else [factor]


def _rope_scaling(config: dict) -> RopeScalingSpec | None:
    """A rope_scaling (or transformers 5's rope_parameters) other than linear or none: yarn, dynamic,
    llama3, longrope, with its factor (a null one read as 1.0, as vLLM does) and the original length."""
    scaling = _section(config, "rope_scaling") or _section(config, "rope_parameters") or {}
    kind = scaling.get("rope_type") or scaling.get("type")
    if not kind or kind in ("default", "linear"):
        return None
    factor = scaling.get("factor")
    original = scaling.get("original_max_position_embeddings")
    return RopeScalingSpec(
        type=str(kind),
        factor=1.0 if factor is None else _factor(factor),
        original_max_position_embeddings=None
        if original is None
        else positive("original_max_position_embeddings", original),
    )


def _factor(value: object) -> float:
    """rope_scaling's linear factor: a finite number above 0, else an error naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise CatalogError(f"rope_scaling.factor must be a number above 0, not {value!r}")
    return float(value)


def positive(key: str, value: object) -> int:
    """A size from config.json that must be a whole number above 0; the error names the key."""
    size = whole(key, value)
    if size is None or size <= 0:
        raise CatalogError(f"{key} must be a whole number above 0, not {value!r}")
    return size


def _vision(outer: dict, text_hidden: int, warnings: list[str]) -> VisionSpec | None:
    """The vision tower of a `...ForConditionalGeneration` config, counted where its builder is known (Gemma
    3's SigLIP, Mistral 3's Pixtral, Llama 4's vision model, with their projectors); another tower is kept as
    present but not counted, with a warning."""
    vision = _section(outer, "vision_config")
    if vision is None:
        return None
    kind, tower = str(outer.get("model_type", "")), str(vision.get("model_type", ""))
    if kind == "gemma3" and tower in ("siglip_vision_model", "") and not vision.get("vision_use_head"):
        return _gemma3_vision(outer, vision, text_hidden)
    if kind == "mistral3" and tower == "pixtral":
        return _mistral3_vision(outer, vision, text_hidden)
    if kind == "kimi_vl" and tower in ("moonvit", ""):
        return kimi_vl_vision(vision, text_hidden)
    if kind == "llava_next" and tower == "siglip_vision_model" and not vision.get("vision_use_head"):
        return llava_next_vision(outer, vision, text_hidden)
    if kind == "llama4" and tower == "llama4_vision_model":
        return _llama4_vision(vision, text_hidden)
    warnings.append(f"vision tower {tower or '(no model_type)'!r} of {kind!r} not counted: its size is not read")
    return VisionSpec()


def _gemma3_vision(outer: dict, vision: dict, text_hidden: int) -> VisionSpec:
    """SigLIP and Gemma3MultiModalProjector, its projection and input norm (vLLM 0.19.0
    models/gemma3_mm.py:515-521); `mm_tokens_per_image` embeddings per image."""
    hidden, size, channels, _ = _siglip_shape(vision)
    return VisionSpec(
        params=siglip_params(vision) + hidden * text_hidden + hidden,
        tokens_per_image=whole("mm_tokens_per_image", outer.get("mm_tokens_per_image", 256)),
        pixels_per_image=channels * size * size,
    )


def _mistral3_vision(outer: dict, vision: dict, text_hidden: int) -> VisionSpec:
    """Pixtral and Mistral3MultiModalProjector (vLLM 0.19.0 models/pixtral.py, mistral3.py:130-170): per layer
    q/k/v/o and gate/up/down without biases and two RMSNorms, the patch convolution and ln_pre; then an
    RMSNorm, the merger of `spatial_merge_size`^2 patches and two linears to the text width. The largest
    image (`image_size` square) becomes (image_size / (patch x merge))^2 embeddings."""
    hidden, size, channels, patch = _siglip_shape(vision)
    inner = whole("vision_config.intermediate_size", vision.get("intermediate_size")) or 0
    layers = whole("vision_config.num_hidden_layers", vision.get("num_hidden_layers")) or 0
    merge = whole("spatial_merge_size", outer.get("spatial_merge_size", 1)) or 1
    tower = (
        layers * (4 * hidden * hidden + 3 * hidden * inner + 2 * hidden) + channels * patch * patch * hidden + hidden
    )
    bias = (text_hidden + text_hidden) if outer.get("multimodal_projector_bias", True) else 0
    projector = hidden + merge * merge * hidden * hidden + hidden * text_hidden + text_hidden * text_hidden + bias
    return VisionSpec(
        params=tower + projector,
        tokens_per_image=(size // (patch * merge)) ** 2,
        pixels_per_image=channels * size * size,
    )


LLAMA4_MAX_TILES = 16
"""transformers' Llama4ImageProcessorFast.max_patches: the image processor's setting (preprocessor_config.json,
which this reader does not see); with it vLLM 0.19.0 profiles Scout with 3 images, as its log says."""


def _llama4_vision(vision: dict, text_hidden: int) -> VisionSpec:
    """Llama4VisionModel and Llama4MultiModalProjector (vLLM 0.19.0 models/mllama4.py:117-545, 760-771): per
    layer q/k/v/o and fc1/fc2 with biases and two LayerNorms; the unfold convolution's linear without bias,
    the class embedding, (size / patch)^2 + 1 position embeddings, the pre and post LayerNorms; the
    pixel-shuffle MLP (intermediate -> projector_input_dim -> projector_output_dim, biases as
    `multi_modal_projector_bias`) and the projector to the text width without bias. The largest dummy image
    is max tiles x 1 tiles and a global tile (mllama4.py:574-582, 631-633), each tile (size / patch)^2
    patches shuffled into `pixel_shuffle_ratio`^2 as many embeddings (:562-572). The same code at 0.20, 0.25
    and 0.33."""
    hidden, size, channels, patch = _siglip_shape(vision)
    inner = whole("vision_config.intermediate_size", vision.get("intermediate_size")) or 0
    layers = whole("vision_config.num_hidden_layers", vision.get("num_hidden_layers")) or 0
    adapter_in = whole("vision_config.projector_input_dim", vision.get("projector_input_dim")) or 0
    adapter_out = whole("vision_config.projector_output_dim", vision.get("projector_output_dim")) or 0
    output = whole("vision_config.vision_output_dim", vision.get("vision_output_dim")) or 0
    ratio = vision.get("pixel_shuffle_ratio", 0.5)
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not 0 < ratio <= 1:
        raise CatalogError("vision_config.pixel_shuffle_ratio must be a number in (0, 1]")
    bias = bool(vision.get("multi_modal_projector_bias", False))
    patches = (size // patch) ** 2
    layer = 4 * (hidden * hidden + hidden) + (hidden * inner + inner) + (inner * hidden + hidden) + 4 * hidden
    embeddings = channels * patch * patch * hidden + hidden + (patches + 1) * hidden + 4 * hidden
    adapter = inner * adapter_in + adapter_in * adapter_out + (adapter_in + adapter_out if bias else 0)
    tiles = LLAMA4_MAX_TILES + 1 if LLAMA4_MAX_TILES > 1 else 1
    return VisionSpec(
        params=layers * layer + embeddings + adapter + output * text_hidden,
        tokens_per_image=tiles * patches // round(1 / (ratio * ratio)),
        pixels_per_image=tiles * channels * size * size,
    )


def _siglip_shape(vision: dict) -> tuple[int, int, int, int]:
    """(hidden, image size, channels, patch) with SiglipVisionConfig's defaults as Gemma 3 sets them."""
    hidden = whole("vision_config.hidden_size", vision.get("hidden_size", 1152)) or 0
    size = whole("vision_config.image_size", vision.get("image_size", 896)) or 0
    channels = whole("vision_config.num_channels", vision.get("num_channels", 3)) or 0
    patch = whole("vision_config.patch_size", vision.get("patch_size", 14)) or 0
    if min(hidden, size, channels, patch) < 1:
        raise CatalogError("vision_config: hidden_size, image_size, num_channels and patch_size must be positive")
    return hidden, size, channels, patch


def siglip_params(vision: dict) -> int:
    """SigLIP's parameters as vLLM 0.19.0 builds them (models/siglip.py): per layer the q/k/v/out projections
    and fc1/fc2 with biases and two LayerNorms; the patch convolution, the position embeddings and the post
    LayerNorm (no pooling head)."""
    hidden, size, channels, patch = _siglip_shape(vision)
    inner = whole("vision_config.intermediate_size", vision.get("intermediate_size", 4304)) or 0
    layers = whole("vision_config.num_hidden_layers", vision.get("num_hidden_layers", 27)) or 0
    layer = 4 * (hidden * hidden + hidden) + 2 * hidden * inner + inner + hidden + 4 * hidden
    embeddings = channels * patch * patch * hidden + hidden + (size // patch) ** 2 * hidden
    return layers * layer + embeddings + 2 * hidden


KIMI_DUMMY_IMAGE = 1024
"""The side of Kimi-VL's dummy image (vLLM 0.19.0 models/kimi_vl.py:87-91, MaxImageTokenMeta)."""
KIMI_IN_TOKEN_LIMIT = 4096
"""KimiVLImageProcessor's in_token_limit in Kimi-VL-A3B-Instruct's preprocessor_config.json (not in config.json):
an image of more patches is scaled down to about this many."""
MOONVIT_ROPE_GRID = 512
"""MoonViT's 2-D RoPE table covers 512 x 512 patch positions (models/moonvit.py:467-469)."""
COMPLEX64_BYTES = 8


def kimi_vl_vision(vision: dict, text_hidden: int) -> VisionSpec:
    """MoonViT and KimiVLMultiModalProjector as vLLM 0.19.0 builds them (models/moonvit.py:90-589,
    models/kimi_vl.py:94-126): per layer two LayerNorms, wqkv and wo with biases, fc0/fc1 with biases; the
    patch conv with a bias, a learned init_pos_emb_height x width position embedding, a final LayerNorm;
    the projector a LayerNorm, then merge^2 x hidden -> the same -> the text width, with biases. The
    dummy image's patches and embeddings follow get_num_image_tokens (kimi_vl.py:163-198)."""
    hidden = whole("vision_config.hidden_size", vision.get("hidden_size", 1152)) or 0
    inner = whole("vision_config.intermediate_size", vision.get("intermediate_size", 4304)) or 0
    layers = whole("vision_config.num_hidden_layers", vision.get("num_hidden_layers", 27)) or 0
    heads = whole("vision_config.num_attention_heads", vision.get("num_attention_heads", 16)) or 0
    patch = whole("vision_config.patch_size", vision.get("patch_size", 14)) or 0
    pos_rows = whole("vision_config.init_pos_emb_height", vision.get("init_pos_emb_height", 64)) or 0
    pos_cols = whole("vision_config.init_pos_emb_width", vision.get("init_pos_emb_width", 64)) or 0
    merge = vision.get("merge_kernel_size", [2, 2])
    if not isinstance(merge, list) or len(merge) != 2:
        raise CatalogError("vision_config.merge_kernel_size is not a pair of numbers")
    merge_rows, merge_cols = (whole("vision_config.merge_kernel_size", value) or 0 for value in merge)
    if min(hidden, inner, heads, patch, pos_rows, pos_cols, merge_rows, merge_cols) < 1 or hidden % heads:
        raise CatalogError("vision_config: MoonViT's sizes must be positive, hidden_size a multiple of the heads")
    layer = 4 * (hidden * hidden + hidden) + 2 * hidden * inner + inner + hidden + 4 * hidden
    tower = layers * layer + 3 * patch * patch * hidden + hidden + pos_rows * pos_cols * hidden + 2 * hidden
    merged = hidden * merge_rows * merge_cols
    projector = 2 * hidden + merged * merged + merged + merged * text_hidden + text_hidden
    rows, cols = _kimi_patch_grid(patch, merge_rows, merge_cols)
    # Whole on every TP rank: the patch conv, positions, LayerNorms, wo/fc1 biases, the ReplicatedLinear projector.
    whole_params = tower - layers * (4 * hidden * hidden + 3 * hidden + 2 * hidden * inner + inner) + projector
    return VisionSpec(
        params=tower + projector,
        replicated_params=whole_params,
        tokens_per_image=rows * cols // (merge_rows * merge_cols),
        pixels_per_image=rows * cols * 3 * patch * patch,
        encoder_buffer_bytes=MOONVIT_ROPE_GRID**2 * (hidden // heads // 2) * COMPLEX64_BYTES,
    )


def _kimi_patch_grid(patch: int, merge_rows: int, merge_cols: int) -> tuple[int, int]:
    """Patch rows and columns of the dummy image: scaled to the token limit, padded to whole merge windows."""
    height = width = KIMI_DUMMY_IMAGE
    if (width // patch) * (height // patch) > KIMI_IN_TOKEN_LIMIT:
        scale = math.sqrt(KIMI_IN_TOKEN_LIMIT / ((width // patch) * (height // patch)))
        width, height = int(width * scale), int(height * scale)
    return math.ceil(height / (merge_rows * patch)) * merge_rows, math.ceil(width / (merge_cols * patch)) * merge_cols


def llava_next_vision(outer: dict, vision: dict, text_hidden: int) -> VisionSpec:
    """A LLaVA-NeXT checkpoint's SigLIP tower, projector and image_newline as vLLM 0.19.0 builds them
    (models/llava_next.py:246-296): SigLIP up to the deepest vision_feature_layer, without its post
    LayerNorm or head (llava.py:438-495, siglip.py:684-745), a projector from the concatenated feature
    layers to the text width and on (llava.py:128-160), one text-width newline vector. The dummy image is the
    pinpoint with the most embeddings (llava_next.py:98-190)."""
    hidden, size, channels, patch = _siglip_shape(vision)
    inner = whole("vision_config.intermediate_size", vision.get("intermediate_size", 4304)) or 0
    total = whole("vision_config.num_hidden_layers", vision.get("num_hidden_layers", 27)) or 0
    feature = outer.get("vision_feature_layer", -2)
    features = feature if isinstance(feature, list) else [feature]
    built = max(
        (total + index + 1 if index < 0 else index)
        for index in (whole("vision_feature_layer", f) or 0 for f in features)
    )
    if not 1 <= built <= total:
        raise CatalogError(f"vision_feature_layer {feature!r} is outside the tower's {total} layers")
    tower = siglip_params({**vision, "num_hidden_layers": built}) - 2 * hidden  # no post LayerNorm
    bias = 2 * text_hidden if outer.get("multimodal_projector_bias", True) else 0
    projector = len(features) * hidden * text_hidden + text_hidden * text_hidden + bias
    grid = size // patch
    base = grid * grid - (1 if outer.get("vision_feature_select_strategy", "default") == "default" else 0)
    best_tokens, best_tiles = 0, 0
    pinpoints = outer.get("image_grid_pinpoints") or [[size, size]]
    if not isinstance(pinpoints, list) or not all(isinstance(p, list) and len(p) == 2 for p in pinpoints):
        raise CatalogError("image_grid_pinpoints is not a list of [height, width] pairs")
    for pinpoint in pinpoints:
        height, width = (whole("image_grid_pinpoints", value) or 0 for value in pinpoint)
        if min(height, width) < size:
            raise CatalogError(f"image_grid_pinpoints entry {pinpoint!r} is smaller than the {size} px tile")
        tiles_high, tiles_wide = height // size, width // size
        tokens = base + _unpadded_features(height, width, grid, tiles_high, tiles_wide)
        if tokens > best_tokens:
            best_tokens, best_tiles = tokens, tiles_high * tiles_wide
    # Whole on every TP rank: SigLIP's patch conv, positions, LayerNorms and out_proj/fc2 biases, the
    # projector's linear_2 bias, image_newline.
    split = built * (4 * hidden * hidden + 3 * hidden + 2 * hidden * inner + inner)
    split += len(features) * hidden * text_hidden + text_hidden * text_hidden + bias // 2
    return VisionSpec(
        params=tower + projector + text_hidden,
        replicated_params=tower + projector + text_hidden - split,
        tokens_per_image=best_tokens,
        pixels_per_image=(best_tiles + 1) * channels * size * size,
    )


def _unpadded_features(height: int, width: int, grid: int, tiles_high: int, tiles_wide: int) -> int:
    """The tiles' features left after unpadding, and one newline per feature row (llava_next.py:142-173)."""
    rows, cols = grid * tiles_high, grid * tiles_wide
    if width / height > cols / rows:
        kept = int(round(height * (cols / width), 7))
        rows -= 2 * ((rows - kept) // 2)
    else:
        kept = int(round(width * (rows / height), 7))
        cols -= 2 * ((cols - kept) // 2)
    return rows * cols + rows


LLAMA4_NO_ROPE_INTERVAL = 4  # transformers' Llama4TextConfig default for no_rope_layer_interval


def _chunks(kind: str, config: dict) -> ChunkedAttentionSpec | None:
    """Llama 4's chunked local attention: a layer whose `no_rope_layers` entry is 0 (NoPE) attends to
    everything, the others within `attention_chunk_size` (vLLM 0.19.0 llama4.py:188-189, 258-259). Without
    a list, transformers fills it from `no_rope_layer_interval`: every interval-th layer is NoPE. A list
    that is not every k-th layer is refused: the KV layout counts the layers by that rule."""
    size = whole("attention_chunk_size", config.get("attention_chunk_size"))
    if kind not in ("llama4", "llama4_text") or not size:
        return None  # 0 turns chunking off, as vLLM's truth test does (llama4.py:258)
    size = positive("attention_chunk_size", size)
    layers = whole("num_hidden_layers", config.get("num_hidden_layers")) or 0
    flags = config.get("no_rope_layers")
    if not flags:
        every = whole("no_rope_layer_interval", config.get("no_rope_layer_interval", LLAMA4_NO_ROPE_INTERVAL))
        return ChunkedAttentionSpec(size=size, full_every=every)
    if not isinstance(flags, list) or len(flags) != layers:
        raise CatalogError(f"no_rope_layers is not a list of {layers} entries, one per layer")
    full = [index for index, flag in enumerate(flags) if flag == 0]
    every = full[0] + 1 if full else None
    if [index for index in range(layers) if every and (index + 1) % every == 0] != full:
        raise CatalogError("no_rope_layers does not mark every k-th layer as NoPE (full attention)")
    return ChunkedAttentionSpec(size=size, full_every=every)


def whole(key: str, value: object) -> int | None:
    """A count from config.json: an integer, or a float with no fraction (`4096.0`); None stays None.
    Anything else (true, 2048.5, Infinity, text, a list) is a CatalogError naming the key; the range
    is the schema's to judge."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    shown = repr(value) if isinstance(value, (bool, float)) else type(value).__name__
    raise CatalogError(f"{key} is {shown}, not a whole number")


WEIGHT_FILES = ("*.safetensors", "*.bin", "*.pt", "*.gguf")
"""Weights beside a config.json make its directory one vLLM and SGLang can serve."""


def served_folder(ref: str) -> Path | None:
    """The model directory a `--config` reference serves, a directory or its config.json alike, where weights
    lie in it: absolute, not resolved (a model directory linked into a store named by hashes keeps the link's
    name, as the launch line gives it). None for a lone file or an HF id."""
    path = Path(ref).expanduser()
    if path.is_dir():
        path = path / "config.json"
    if path.name != "config.json" or not path.is_file():
        return None
    folder = Path(os.path.abspath(path)).parent  # not resolved: a cached config.json links into the blobs
    return folder if any(any(folder.glob(pattern)) for pattern in WEIGHT_FILES) else None


def model_id_for(path: Path, config: dict, ref: str | None = None) -> str:
    """A readable id for the config.json at `path`, found from `ref` (what the user typed): the id of a
    Hugging Face cache entry; the model directory served (`served_folder`), named as `vllm serve DIR` names it
    (`served_model_name` defaults to the path given), whether `ref` is the directory or its config.json; else
    the config's `_name_or_path`, else the name of the file's directory. Never the shell's current directory."""
    parts = path.resolve().parts
    for part in parts:
        if part.startswith("models--"):
            return part[len("models--") :].replace("--", "/")
    folder = served_folder(ref) if ref is not None else None
    if folder is not None:
        return str(folder)
    name = config.get("_name_or_path")
    if name:
        return str(name)
    return path.resolve().parent.name


def read_model_config(ref: str) -> tuple[ModelSpec, list[str], Path]:
    """The model a `--config` reference describes (a file, a model directory, a cached id), its warnings and
    the config.json read; named as `model_id_for` says, with errors that name the file."""
    path = find_config(ref)
    config = load_config(path)
    spec, warnings = model_from_config(config, model_id_for(path, config, ref), where=str(path))
    return spec, warnings, path


def _checkpoint_format(config: dict, warnings: list[str]) -> str | None:
    """The format of quantized weights; an 8-bit GPTQ/AWQ checkpoint as int8. Other bit widths are sized
    as 4-bit, and said so."""
    method = _QUANT_FORMATS.get(str(_quant_method(config)))
    if method not in ("gptq", "awq"):
        return method
    quant = config["quantization_config"]
    bits = quant.get("bits") or quant.get("w_bit") or 4
    if bits == 8:
        return "int8"
    if bits != 4:
        warnings.append(f"{method} checkpoint of {bits!r}-bit weights: sized as 4-bit")
    return method


def _group_size(config: dict, method: str | None, warnings: list[str]) -> int | None:
    """Weights per scale of a 4-bit AWQ or GPTQ checkpoint, by the keys vLLM reads (awq.py:88, gptq.py:148 at
    0.19.0); None where the config does not say (128 is sized) or it is not one."""
    if method not in ("gptq", "awq"):
        return None
    quant = config["quantization_config"]
    keys = ("q_group_size", "group_size") if method == "awq" else ("group_size",)
    value = next((quant[key] for key in keys if key in quant), None)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not (value == -1 or value > 0):
        warnings.append(f"{method} checkpoint's group_size {value!r} is not a whole number of weights: sized at 128")
        return None
    return value


def _quant_method(config: dict) -> object:
    quant = config.get("quantization_config")
    return quant.get("quant_method") if isinstance(quant, dict) else None

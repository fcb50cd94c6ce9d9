"""Engine settings from what a startup log or a calibration case states: model, GPU, version, flags."""

from __future__ import annotations

import re

from gpumem_tui.catalog import Catalog, LookupFailed, ModelSpec
from gpumem_tui.catalog.schema import GpuSpec
from gpumem_tui.planner.dtypes import PlanInputError
from gpumem_tui.planner.vllm.lengths import longest_accepted
from gpumem_tui.planner.vllm.loaded import QUANTIZATION
from gpumem_tui.planner.vllm.records import EngineSettings
from gpumem_tui.planner.vllm.versions import DEFAULT_VERSION
from gpumem_tui.planner.vllm.vision import mm_limits
from gpumem_tui.planner.vllm.wording import release_from_wording
from gpumem_tui.records import Record
from gpumem_tui.units import GIB

_GPU_WORDS = [
    ("h200", "h200"),
    ("h100", "h100"),
    ("b200", "b200"),
    ("a100-40", "a100-40gb"),
    ("a100", "a100"),
    ("l40s", "l40s"),
    ("4090", "rtx4090"),
    ("l4", "l4"),
    ("a10g", "a10g"),
]


class Stated(Record):
    """Settings as a log or a case states them; None where it does not say."""

    model: str | None = None
    gpu: str | None = None
    version: str | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    dtype: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enforce_eager: bool | None = None
    total_gpu_memory_gib: float | None = None
    limit_mm_per_prompt: str | None = None

    @classmethod
    def from_case(cls, case: dict) -> Stated:
        """The settings a calibration case (or any dict with these keys) states."""
        return cls(**{key: case.get(key) for key in cls.model_fields if key in case})


def release_of(named: str | None, lines: list[str], given: str | None = None) -> dict:
    """The release whose rules a prediction of a log (or a calibration case) follows: `given` (the user's
    --vllm-version), else the one the log names (as written; of several, the last version-looking token:
    'between 0.6.4.post1 and v0.6.5'), else the one its lines' wording points to (`wording.py`), else the
    default release. Returns `version`, `source` (given, log, wording, default), `family` (with wording)
    and a `note` when the release was not named."""
    if given:
        return {"version": given, "source": "given", "family": None, "note": None}
    found = re.findall(r"v?(\d+\.\d+(?:\.\d+)?)", named or "")
    if found:
        one = len(found) == 1 and " " not in (named or "").strip()
        return {"version": (named or "").strip() if one else found[-1], "source": "log", "family": None, "note": None}
    inferred = release_from_wording(lines)
    if inferred is None:
        return {
            "version": DEFAULT_VERSION,
            "source": "default",
            "family": None,
            "note": f"the log does not name its vLLM version and its wording does not tell: predicting "
            f"{DEFAULT_VERSION} — pass --vllm-version to choose",
        }
    return {
        "version": inferred.version,
        "source": "wording",
        "family": inferred.family,
        "note": f"release inferred from the log's wording: {inferred.family}, predicted with "
        f"{inferred.version}'s rules — pass --vllm-version to override",
    }


def resolve_gpu(catalog: Catalog, text: str | None) -> GpuSpec | None:
    """A catalog GPU from loose text such as `H100-80GB x2` or an NVML name."""
    if not text:
        return None
    found = catalog.gpu_by_nvml_name(text)
    if found:
        return found
    lowered = text.lower().replace(" ", "")
    return next((catalog.gpu(key) for word, key in _GPU_WORDS if word in lowered), None)


def quantization_method(stated: str | None, implied: str | None) -> str | None:
    """vLLM's quantization label (fp8, compressed-tensors, gptq_marlin, ...) as one of ours."""
    label = (stated or "").lower()
    if label in ("", "none"):
        return implied
    if label == "compressed-tensors":
        return implied or "w8a8"
    if label in QUANTIZATION:  # awq_marlin, gptq_marlin, ...: the method it ran, sized by its own layout
        return label
    if label.startswith("awq"):
        return "awq"
    if label.startswith("gptq"):
        return "gptq"
    return label


def assumed(stated: Stated, settings: EngineSettings) -> list[str]:
    """The settings a prediction uses that the log does not state: each with its value and where it came
    from, so a prediction "from the settings the log states" never passes a default off as stated."""
    said = "the log does not state it"
    out = []
    if stated.max_model_len is None:
        length = settings.max_model_len or longest_accepted(settings.model) or 2048
        out.append(f"max_model_len {length:,} (the model's default; {said}) — pass --max-model-len")
    if stated.tensor_parallel_size is None:
        out.append(f"tensor_parallel_size {settings.tp} ({said})")
    if stated.gpu_memory_utilization is None:
        out.append(f"gpu_memory_utilization {settings.utilization:g} (vLLM's default; {said})")
    if stated.limit_mm_per_prompt and settings.limit_mm_per_prompt is None:
        out.append(
            f"limit_mm_per_prompt 999 per modality (vLLM's default): the log's {stated.limit_mm_per_prompt[:60]!r} "
            "is not counts from 0 to 1,000,000 per modality"
        )
    return out


def settings_from(
    catalog: Catalog, stated: Stated, version: str, gpu: GpuSpec | None = None, model: ModelSpec | None = None
) -> EngineSettings:
    """EngineSettings for a prediction; the GPU's own total unless the GPU is unknown and a total is stated."""
    if model is not None:
        implied = None
    elif not stated.model:
        raise LookupFailed("model", "(not stated)", [])
    else:
        found = catalog.match_model(stated.model)
        model, implied = found.spec, found.quantization
    gpu = gpu or resolve_gpu(catalog, stated.gpu)
    total = None
    if gpu is None:
        if not stated.total_gpu_memory_gib:
            raise LookupFailed("GPU", stated.gpu or "(not stated)", [])
        unnamed = f"unnamed in the log ({stated.total_gpu_memory_gib:.2f} GiB)"
        gpu = GpuSpec(key=stated.gpu or unnamed, nominal_gib=stated.total_gpu_memory_gib)
        total = round(stated.total_gpu_memory_gib * GIB)
    return EngineSettings(
        model=model,
        gpu=gpu,
        version=version,
        tp=stated.tensor_parallel_size or 1,
        pp=stated.pipeline_parallel_size or 1,
        dtype=(stated.dtype or "auto").removeprefix("torch."),
        quantization=quantization_method(stated.quantization, implied),
        kv_cache_dtype=stated.kv_cache_dtype or "auto",
        utilization=stated.gpu_memory_utilization or 0.9,
        max_model_len=stated.max_model_len,
        max_num_seqs=stated.max_num_seqs,
        max_num_batched_tokens=stated.max_num_batched_tokens,
        enforce_eager=bool(stated.enforce_eager),
        total_memory_bytes=total,
        limit_mm_per_prompt=stated_limits(stated.limit_mm_per_prompt),
    )


def stated_limits(text: str | None) -> dict[str, int] | None:
    """`--limit-mm-per-prompt` as the log states it; None when it does not, or when a collector cut the
    dict short (then vLLM's default, 999 each, is what the prediction uses)."""
    if not text:
        return None
    try:
        return mm_limits(text)
    except PlanInputError:
        return None

"""The command that launches a plan on SGLang: `python -m sglang.launch_server --model-path MODEL --tp N`
with the flags its settings were predicted with. What a flag alone cannot give (weights quantized
beforehand) is left out and said in a note."""

from __future__ import annotations

from gpumem_tui.planner.sglang.records import SglangSettings
from gpumem_tui.planner.sglang.versions import Rules, parse_version
from gpumem_tui.planner.vllm.launch import FP8_KV, FROM_CHECKPOINT, SIXTEEN_BIT_KV, LaunchLine


def launch_line(
    settings: SglangSettings, model: str | None = None, default_fraction: float | None = None
) -> LaunchLine:
    """The command for these settings; `model`: the model argument (vllm.launch.model_argument), else the
    catalog's id; `default_fraction`: what the release picks when no fraction is given, said in a note."""
    rules = Rules(parse_version(settings.version))
    notes: list[str] = []
    argv = ["python", "-m", "sglang.launch_server", "--model-path", model or settings.model.id]
    argv += ["--tp", str(settings.tp)]
    if settings.pp > 1:
        argv += ["--pp-size", str(settings.pp)]
    if settings.enable_dp_attention:
        argv += ["--dp", str(settings.dp), "--enable-dp-attention"]
    if settings.mem_fraction_static is not None:
        argv += ["--mem-fraction-static", f"{settings.mem_fraction_static:g}"]
    elif default_fraction is not None:
        notes.append(f"no --mem-fraction-static: SGLang {settings.version} picks {default_fraction:.3f} on this card")
    if settings.context_length:
        argv += ["--context-length", str(settings.context_length)]
    argv += _weights(settings, notes) + _kv_cache(settings, rules, notes) + _scheduler(settings)
    return LaunchLine(argv=argv, notes=notes)


def _weights(settings: SglangSettings, notes: list[str]) -> list[str]:
    method, name = settings.quantization, settings.model.id
    flags = ["--dtype", settings.dtype] if settings.dtype != "auto" else []
    if method is None:
        return flags
    if method == "fp8":
        return flags + ["--quantization", "fp8"]
    if method == "none":
        if settings.model.checkpoint_format:
            notes.append(
                f"{name} ships {settings.model.checkpoint_format} weights: for the planned 16-bit weights serve a "
                "16-bit checkpoint of the model in its place"
            )
        return flags
    what = FROM_CHECKPOINT.get(method, method)
    notes.append(f"SGLang reads {what} weights from a checkpoint quantized so: serve one in place of {name}")
    return flags


def _kv_cache(settings: SglangSettings, rules: Rules, notes: list[str]) -> list[str]:
    """SGLang's FP8 caches are fp8_e5m2 and (from 0.4.3) fp8_e4m3; 16-bit is its default."""
    dtype = settings.kv_cache_dtype.lower()
    if dtype in FP8_KV:
        chosen = dtype if dtype in ("fp8_e4m3", "fp8_e5m2") else ("fp8_e4m3" if rules.at_least(0, 4, 3) else "fp8_e5m2")
        return ["--kv-cache-dtype", chosen]
    if dtype not in SIXTEEN_BIT_KV:
        notes.append(f"SGLang's --kv-cache-dtype has no {settings.kv_cache_dtype}: the line leaves it at the default")
    return []


def _scheduler(settings: SglangSettings) -> list[str]:
    """The flags set beyond the release's defaults."""
    flags: list[str] = []
    for flag, value in (
        ("--chunked-prefill-size", settings.chunked_prefill_size),
        ("--cuda-graph-max-bs", settings.cuda_graph_max_bs),
        ("--max-total-tokens", settings.max_total_tokens),
        ("--max-running-requests", settings.max_running_requests),
    ):
        if value is not None:
            flags += [flag, str(value)]
    if settings.page_size != 1:
        flags += ["--page-size", str(settings.page_size)]
    return flags + (["--disable-cuda-graph"] if settings.disable_cuda_graph else [])

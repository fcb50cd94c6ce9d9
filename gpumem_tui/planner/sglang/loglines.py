"""The memory lines an SGLang release will print at startup, in its own wording (wording.py's table).
SGLang prints GiB (sizes / 1024**3) and calls them "GB"; the lines keep its word."""

from __future__ import annotations

from gpumem_tui.planner.sglang.records import SglangPrediction, SglangSettings
from gpumem_tui.planner.sglang.versions import Rules
from gpumem_tui.planner.sglang.wording import BY_KEY, prints
from gpumem_tui.units import GIB

TORCH_DTYPES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16", "half": "float16"}


def _gb(value: int) -> str:
    return f"{value / GIB:.2f}"


def _dtype(settings: SglangSettings) -> str:
    name = settings.dtype if settings.dtype != "auto" else (settings.model.native_dtype or "bf16")
    return "torch." + TORCH_DTYPES.get(name.lower().removeprefix("torch."), "bfloat16")


def _line(key: str, **fields: object) -> str:
    return BY_KEY[key].text.format(**fields)


def log_lines(settings: SglangSettings, rules: Rules, p: SglangPrediction) -> list[str]:
    version = rules.version
    end = "weights_end_usage" if prints("weights_end_usage", version) else "weights_end"
    lines = [
        _line("weights_begin", total=_gb(p.total_bytes)),
        _line(
            end,
            arch=settings.model.architecture,
            dtype=_dtype(settings),
            avail=_gb(p.avail_bytes),
            usage=_gb(p.weights_bytes),
        ),
    ]
    if p.kv_cache_tokens <= 0:
        current = f" Current value: self.server_args.mem_fraction_static={p.mem_fraction_static:g}"
        return lines + [_line("not_enough") + (current if rules.at_least(0, 5, 6) else "")]
    lines += _kv(settings, rules, p)
    lines.append(_line("pool_end", left=_gb(p.left_after_pool_bytes)))
    return lines + [_max_total(settings, rules, p)]


def _kv(settings: SglangSettings, rules: Rules, p: SglangPrediction) -> list[str]:
    version, half = rules.version, _gb(p.kv_cache_bytes // 2)
    mla = settings.model.mla is not None and rules.mla_default
    if mla:
        return (
            [_line("kv_tokens_mla", tokens=p.kv_cache_tokens, kv=_gb(p.kv_cache_bytes))]
            if prints("kv_tokens_mla", version)
            else []
        )
    if prints("kv_tokens", version):
        return [_line("kv_tokens", tokens=p.kv_cache_tokens, k=half, v=half)]
    return [_line("kv_sizes", k=half, v=half)] if prints("kv_sizes", version) else []


def _max_total(settings: SglangSettings, rules: Rules, p: SglangPrediction) -> str:
    key = next(k for k in ("max_total_available", "max_total_chunked", "max_total") if prints(k, rules.version))
    return _line(
        key,
        tokens=p.kv_cache_tokens,
        chunk=p.chunked_prefill_size,
        prefill=settings.max_prefill_tokens,
        running=p.max_running_requests,
        context=p.context_len,
        after=_gb(p.left_after_graphs_bytes),
    )

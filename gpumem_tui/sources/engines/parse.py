"""One /metrics payload -> engine records for every engine kind it holds (vLLM, SGLang, llama.cpp, TGI)."""

from __future__ import annotations

from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.sources.engines import llamacpp, sglang, tgi, vllm
from gpumem_tui.sources.engines.prometheus import MetricsError, parse_families
from gpumem_tui.sources.engines.series import with_note

NORMALIZERS = (vllm, sglang, llamacpp, tgi)
ALL_FAMILIES = frozenset(name for module in NORMALIZERS for name in module.FAMILIES)


def parse_metrics(text: str, endpoint: str | None = None, whole: bool = True) -> list[EngineRecord]:
    """Normalized records, or MetricsError saying in words why the payload is not engine metrics.

    `whole`: the text is a complete exposition, so it must end with a line feed (the format says so);
    one that stops mid-line was cut off. Saved files and excerpts are read with `whole=False`.
    """
    _refuse_non_metrics(text)
    families = parse_families(text, ALL_FAMILIES)
    records: list[EngineRecord] = []
    for module in NORMALIZERS:
        if any(name in families.present for name in module.FAMILIES):
            records.extend(module.normalize(families))
    if not records:
        raise MetricsError("no vLLM, SGLang, llama.cpp or TGI metrics in the payload")
    for note in families.notes:
        records = with_note(records, note)
    if whole and not text.endswith("\n"):
        raise MetricsError("payload stops mid-line: truncated (a complete exposition ends with a line feed)")
    if endpoint is not None:
        records = [r.model_copy(update={"endpoint": endpoint}) for r in records]
    return records


def _refuse_non_metrics(text: str) -> None:
    head = text.lstrip()[:512].lower()
    if not head:
        raise MetricsError("empty payload")
    if head.startswith(("<!doctype html", "<html", "<head", "<body")) or "<html" in head:
        raise MetricsError("got an HTML page, not Prometheus metrics (an error page or a proxy?)")
    if head.startswith(("{", "[")):
        raise MetricsError("got JSON, not Prometheus metrics (is this the right URL?)")

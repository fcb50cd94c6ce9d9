"""One /metrics payload -> engine records for every engine kind it holds (each kind's normalizer: `registry.py`)."""

from __future__ import annotations

from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.sources.engines.prometheus import MetricsError, parse_families
from gpumem_tui.sources.engines.registry import ENGINES, all_families
from gpumem_tui.sources.engines.series import with_note

MAX_BYTES = 8 * 2**20
"""The largest /metrics payload read, live (the scraper stops reading beyond) or saved (`metrics FILE`)."""
ALL_FAMILIES = all_families()
"""The sample names the built-in engines read (the parser asks the registry each time, for engines added since)."""


def parse_metrics(text: str, endpoint: str | None = None, whole: bool = True) -> list[EngineRecord]:
    """Normalized records, or MetricsError saying in words why the payload is not engine metrics.

    `whole`: the text is a complete exposition, so it must end with a line feed (the format says so);
    one that stops mid-line was cut off. Saved files and excerpts are read with `whole=False`.
    """
    _refuse_non_metrics(text)
    engines = list(ENGINES.values())
    families = parse_families(text, all_families())
    records: list[EngineRecord] = []
    for engine in engines:
        if any(name in families.present for name in engine.families):
            records.extend(engine.normalize(families))
    if not records:
        raise MetricsError(f"no {_either([e.label for e in engines])} metrics in the payload")
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


def _either(labels: list[str]) -> str:
    """`vLLM, SGLang, llama.cpp or TGI`."""
    return " or ".join([", ".join(labels[:-1]), labels[-1]] if len(labels) > 1 else labels)

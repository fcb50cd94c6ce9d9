"""`gpumem-tui metrics FILE|URL [--json]`: what one engine's /metrics says right now, normalized (the options:
metrics_opts.py)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from gpumem_tui.cli.errors import NoSourceError, UsageError
from gpumem_tui.cli.output import console, print_json, table
from gpumem_tui.diagnosis.engine_values import questioned
from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.sources.bounded_file import BoundedFileError, read_bounded
from gpumem_tui.sources.engines.endpoints import EndpointError, endpoint
from gpumem_tui.sources.engines.parse import MAX_BYTES, parse_metrics
from gpumem_tui.sources.engines.prometheus import MetricsError
from gpumem_tui.text import literal, shown_url


def run(args: argparse.Namespace) -> int:
    source = args.source
    records = _from_url(source, args.timeout) if _is_url(source) else _from_file(source)
    if args.json:
        print_json([r.model_dump(mode="json") for r in records])
        return 0
    out = console()
    for i, record in enumerate(records):
        if i:
            out.print()
        out.print(_title(record))
        out.print(table(None, ["reading", "value"], _rows(record), right={1}))
        for line in [*questioned(record), *(f"note: {note}" for note in record.notes)]:
            out.print(literal(line))
    return 0


def _from_file(path: str) -> list[EngineRecord]:
    """A saved payload (or a pipe), read no further than the scraper reads a live one (MAX_BYTES): a larger
    file, or one that never ends (/dev/zero), is refused rather than read into memory for ever."""
    try:
        raw = read_bounded(path, MAX_BYTES, pipes=True)
    except BoundedFileError as exc:
        raise UsageError(exc.said(path, "larger than any engine's /metrics payload")) from None
    text = raw.decode("utf-8", errors="replace")
    try:
        return parse_metrics(text, whole=False)
    except MetricsError as exc:
        raise UsageError(f"{path}: {exc}") from None


def _from_url(url: str, timeout_s: float) -> list[EngineRecord]:
    """One scrape, as the live view makes it (asyncio and the scraper, with httpx, are loaded for a URL only)."""
    import asyncio

    try:
        point = endpoint(url)
    except EndpointError as exc:
        raise UsageError(str(exc)) from None
    status = asyncio.run(_scrape_once(point, timeout_s))
    if status.state != "ok":
        raise NoSourceError(f"{shown_url(point.metrics_url)}: {status.error}")
    return status.records


async def _scrape_once(point, timeout_s: float):
    from gpumem_tui.sources.engines.scraper import Scraper

    async with Scraper([point], read_timeout_s=timeout_s) as scraper:
        return (await scraper.scrape())[0]


def _title(r: EngineRecord) -> str:
    kind = f"{r.engine} {r.version_family}" if r.version_family else r.engine
    engine = f" (engine {literal(r.engine_index)})" if r.engine_index is not None else ""
    return f"{kind}: {literal(r.model)}{engine}"


def _rows(r: EngineRecord) -> list[list[str]]:
    rate = "" if r.preemptions_per_min is None else f" ({r.preemptions_per_min:.1f}/min)"
    return [
        ["KV cache used", _pct(r.kv_usage_fraction)],
        ["KV pool", _tokens(r.kv_pool_tokens)],
        ["GPU blocks x block size", f"{_num(r.num_gpu_blocks)} x {_num(r.block_size)}"],
        ["cache dtype", literal(r.cache_dtype)],
        ["gpu_memory_utilization", _num(r.gpu_memory_utilization)],
        ["max model length", _num(r.max_model_len)],
        ["requests running / waiting", f"{_num(r.requests_running)} / {_num(r.requests_waiting)}"],
        ["preemptions", _num(r.preemptions_total) + rate],
        ["prefix-cache hit rate", _pct(r.prefix_cache_hit_rate)],
        ["CPU cache used (v0)", _pct(r.cpu_cache_usage_fraction)],
    ]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f} %"


def _tokens(value: int | None) -> str:
    return "-" if value is None else f"{value:,} tok"


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def _is_url(source: str) -> bool:
    """A URL, or `host:port` that names no file here (as --endpoint accepts it)."""
    if "://" in source:
        return True
    return not Path(source).exists() and re.fullmatch(r"[\w.\-\[\]:]+:\d+(/.*)?", source) is not None

"""SGLang's startup memory lines, each with the release that first printed it (reference section 2).

One table: the predicted log lines (loglines.py) take their wording from it, and a log's wording can be
held against it (`releases_allowed`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpumem_tui.planner.sglang.versions import LAST_KNOWN, RC, Version, parse_version


@dataclass(frozen=True)
class Template:
    """A line's wording (`{}` fields), a pattern that finds it, and the releases that print it."""

    key: str
    text: str
    pattern: re.Pattern[str]
    since: Version
    until: Version = LAST_KNOWN


def _template(key: str, text: str, pattern: str, since: str, until: str | None = None) -> Template:
    return Template(key, text, re.compile(pattern), parse_version(since), parse_version(until) if until else LAST_KNOWN)


N = r"-?\d+(?:\.\d+)?"
TEMPLATES = (
    _template(
        "weights_begin", "Load weight begin. avail mem={total} GB", rf"Load weight begin\. avail mem={N} GB", "0.3.0"
    ),
    _template(
        "weights_end",
        "Load weight end. type={arch}, dtype={dtype}, avail mem={avail} GB",
        rf"Load weight end\. type=\w+, dtype=[\w.]+, avail mem={N} GB\s*$",
        "0.3.0",
        "0.4.3.post2",
    ),
    _template(
        "weights_end_usage",
        "Load weight end. type={arch}, dtype={dtype}, avail mem={avail} GB, mem usage={usage} GB.",
        rf"avail mem={N} GB, mem usage={N} GB\.",
        "0.4.3.post3",
    ),
    _template(
        "kv_sizes",
        "KV Cache is allocated. K size: {k} GB, V size: {v} GB.",
        rf"KV Cache is allocated\. K size: {N} GB",
        "0.4.1.post6",
        "0.4.3.post2",
    ),
    _template(
        "kv_tokens",
        "KV Cache is allocated. #tokens: {tokens}, K size: {k} GB, V size: {v} GB",
        rf"KV Cache is allocated\. #tokens: \d+, K size: {N} GB",
        "0.4.3.post3",
    ),
    _template(
        "kv_tokens_mla",
        "KV Cache is allocated. #tokens: {tokens}, KV size: {kv} GB",
        rf"KV Cache is allocated\. #tokens: \d+, KV size: {N} GB",
        "0.4.6",
    ),
    _template("pool_end", "Memory pool end. avail mem={left} GB", rf"Memory pool end\. avail mem={N} GB", "0.3.0"),
    _template(
        "max_total",
        "max_total_num_tokens={tokens}, max_prefill_tokens={prefill}, max_running_requests={running}, "
        "context_len={context}",
        r"max_total_num_tokens=\d+, max_prefill_tokens=",
        "0.3.0",
        "0.4.2.post99",
    ),
    _template(
        "max_total_chunked",
        "max_total_num_tokens={tokens}, chunked_prefill_size={chunk}, max_prefill_tokens={prefill}, "
        "max_running_requests={running}, context_len={context}",
        r"max_total_num_tokens=\d+, chunked_prefill_size=\d+, max_prefill_tokens=\d+, max_running_requests=\d+, "
        r"context_len=\d+\s*$",
        "0.4.3",
        "0.4.6.post99",
    ),
    _template(
        "max_total_available",
        "max_total_num_tokens={tokens}, chunked_prefill_size={chunk}, max_prefill_tokens={prefill}, "
        "max_running_requests={running}, context_len={context}, available_gpu_mem={after} GB",
        rf"max_total_num_tokens=\d+, .*available_gpu_mem={N} GB",
        "0.4.7",
    ),
    _template(
        "not_enough",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        r"Not enough memory\. Please try to increase --mem-fraction-static",
        "0.3.0",
    ),
)
"""`kv_sizes` is added by 72c777635 (first in 0.4.1.post6); `#tokens` and `mem usage` by e074d84e5
(0.4.3.post3); the MLA line by e69a21907 (0.4.6); `chunked_prefill_size=` by 0.4.3 (scheduler.py:284-289);
`available_gpu_mem=` by 2d72fc47c (0.4.7)."""
BY_KEY = {template.key: template for template in TEMPLATES}


def prints(key: str, version: Version) -> bool:
    """Whether the release prints the line `key`."""
    template = BY_KEY[key]
    return template.since <= version <= template.until


def releases_allowed(lines: list[str]) -> tuple[Version, Version] | None:
    """The span of releases whose wording the lines all fit (the narrowest of the templates found), or
    None when no line is one of them."""
    found = [t for t in TEMPLATES if any(t.pattern.search(line) for line in lines)]
    if not found:
        return None
    low, high = (0, 0, 0, RC), LAST_KNOWN
    for template in found:
        if template.since <= high and template.until >= low:
            low, high = max(low, template.since), min(high, template.until)
    return low, high

"""Which vLLM release a log comes from, told by its wording when no line names the version.

Each release family words its startup lines its own way (shared/reference/vllm_memory.md, section c):
the weights line, the profile lines, the blocks line, the log prefix. Every cue found narrows the
range of releases; cues that contradict the narrower ones already taken (a pasted mix of two logs)
are left out. The prediction then follows the newest release this project knows inside that range,
and a V0 log is predicted with V0 rules (before 0.8, where the planner models the V0 engine).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpumem_tui.planner.vllm.versions import DEFAULT_VERSION, Version, parse_version

LATEST: Version = (99, 0, 0)
ANY_PATCH = 99
LAST_V0: Version = (0, 7, 3)
"""The planner's V0 rules are those of releases before 0.8; later releases default to V1."""
KNOWN = (
    "0.4.3",
    "0.5.5",
    "0.6.3",
    "0.6.4",
    "0.6.5",
    "0.6.6",
    "0.7.3",
    "0.8.0",
    "0.8.5",
    "0.9.2",
    "0.10.2",
    "0.11.0",
    "0.11.2",
    "0.12.0",
    *(f"0.{minor}.0" for minor in range(13, 31)),
    DEFAULT_VERSION,
)
"""Releases whose wheels the reference was read from: the prediction names one of these."""


@dataclass(frozen=True)
class Cue:
    """A wording only some releases use: the range of releases (inclusive) and the engine, when it tells."""

    pattern: re.Pattern[str]
    low: Version
    high: Version
    engine: str | None = None


def _cue(pattern: str, low: Version, high: Version, engine: str | None = None) -> Cue:
    return Cue(re.compile(pattern.replace("{N}", r"-?\d+(?:\.\d+)?")), low, high, engine)


CUES = (
    _cue(r"Memory profiling results: (?:duration=\S+ seconds, )?total_gpu_memory=", (0, 6, 4), (0, 6, 4), "V0"),
    _cue(r"(?:^|\] )total_gpu_memory\s+{N}\s*GiB\s*$", (0, 6, 5), (0, 6, 5), "V0"),
    _cue(r"the current vLLM instance can use total_gpu_memory \(", (0, 6, 5), (0, 10, ANY_PATCH), "V0"),
    _cue(r"non_torch_memory takes {N}GiB; PyTorch activation peak", (0, 6, 5), (0, 10, ANY_PATCH), "V0"),
    _cue(r"Memory profiling takes {N} seconds\s*$", (0, 6, 5), (0, 10, ANY_PATCH), "V0"),
    _cue(r"GPU blocks: \d+, # CPU blocks", (0, 0, 0), (0, 6, ANY_PATCH), "V0"),
    _cue(r"# (?:CUDA|cuda) blocks: \d+, # CPU blocks", (0, 7, 0), (0, 10, ANY_PATCH), "V0"),
    _cue(
        r"The model's max seq len \(\d+\) is larger than the maximum number of tokens",
        (0, 0, 0),
        (0, 10, ANY_PATCH),
        "V0",
    ),
    _cue(r"No available memory for the cache blocks", (0, 0, 0), (0, 10, ANY_PATCH), "V0"),
    _cue(r"# GPU blocks: \d+\s*$", (0, 6, 6), (0, 7, ANY_PATCH), "V1"),
    _cue(r"Loading model weights took {N} GB", (0, 0, 0), (0, 7, ANY_PATCH)),
    _cue(r"Model loading took {N} GB and", (0, 8, 0), (0, 8, 4), "V1"),
    _cue(r"Model loading took {N} GiB and", (0, 8, 5), (0, 11, 1), "V1"),
    _cue(r"Model loading took {N} GiB memory and", (0, 11, 2), LATEST, "V1"),
    _cue(r"Available KV cache memory: {N} GiB", (0, 9, 0), LATEST, "V1"),
    _cue(r"KV cache size: [\d,]+ tokens\s*$", (0, 8, 0), (0, 29, ANY_PATCH), "V1"),
    _cue(r"KV cache size: [\d,]+ tokens, Maximum concurrency", (0, 30, 0), LATEST, "V1"),
    _cue(r"Estimated CUDA graph memory: {N} GiB total", (0, 18, 0), LATEST, "V1"),
    _cue(r"In v0\.19, CUDA graph memory profiling will be enabled by default", (0, 18, 0), (0, 19, ANY_PATCH), "V1"),
    _cue(r"CUDA graph memory profiling is enabled \(default since", (0, 20, 0), LATEST, "V1"),
    _cue(r"GiB for weight, {N} GiB for peak activation", (0, 10, 2), (0, 26, ANY_PATCH), "V1"),
    _cue(r"GiB for consumed memory \(weights \+ non-torch\)", (0, 27, 0), LATEST, "V1"),
    _cue(r"on startup is less than desired GPU memory utilization", (0, 9, 0), LATEST, "V1"),
    _cue(r"with the models's max seq len", (0, 11, 0), (0, 17, ANY_PATCH), "V1"),
    _cue(r"Memory profiling takes {N} seconds\. Total non KV cache memory", (0, 9, 0), LATEST, "V1"),
    _cue(r"Graph capturing finished in \d+ secs\.?\s*$", (0, 0, 0), (0, 6, 3)),
    # The prefix: `file.py:N]` up to 0.7, `[file.py:N]` from 0.8, a relative path inside it from 0.10.
    _cue(r"\d\d:\d\d:\d\d(?:\.\d+)? [\w.\-]+\.py:\d+\] ", (0, 0, 0), (0, 7, ANY_PATCH)),
    _cue(r"\d\d:\d\d:\d\d(?:\.\d+)? \[[\w.\-]+\.py:\d+\] ", (0, 8, 0), LATEST),
    _cue(r"\d\d:\d\d:\d\d(?:\.\d+)? \[[\w.\-]+/[\w/.\-]+\.py:\d+\] ", (0, 10, 0), LATEST),
)


@dataclass(frozen=True)
class Inferred:
    """The releases a log's wording allows, and the one whose rules the prediction follows."""

    low: Version
    high: Version
    engine: str | None
    version: str
    """A release the reference was read from, inside the range (before 0.8 for a V0 log)."""

    @property
    def family(self) -> str:
        """`0.7.x (V0)`, `0.6.4 (V0)`, `0.9 to 0.29.x (V1)`, `0.18 or later (V1)`."""
        return _span(self.low, self.high) + (f" ({self.engine})" if self.engine else "")


def release_from_wording(lines: list[str]) -> Inferred | None:
    """The release family the lines' wording points to, or None when no line tells."""
    found = [cue for cue in CUES if any(cue.pattern.search(line) for line in lines)]
    if not found:
        return None
    low, high, engine = (0, 0, 0), LATEST, None
    for cue in sorted(found, key=_width):
        new_low, new_high = max(low, cue.low), min(high, cue.high)
        if new_low > new_high or (cue.engine and engine and cue.engine != engine):
            continue
        low, high, engine = new_low, new_high, engine or cue.engine
    if engine is None and high < (0, 6, 6):
        engine = "V0"  # V1 did not exist yet
    return Inferred(low, high, engine, _representative(low, high, engine))


def _width(cue: Cue) -> tuple[int, ...]:
    return tuple(h - lo for h, lo in zip(cue.high, cue.low, strict=True))


def _representative(low: Version, high: Version, engine: str | None) -> str:
    top = min(high, LAST_V0) if engine == "V0" else high
    inside = [v for v in KNOWN if low <= parse_version(v) <= top]
    if inside:
        return inside[-1]
    if engine == "V0" and low > LAST_V0:
        return ".".join(map(str, LAST_V0))
    return ".".join(map(str, low))


def _span(low: Version, high: Version) -> str:
    if low == high:
        return ".".join(map(str, low))
    if high == LATEST:
        return f"{_short(low)} or later"
    if low[:2] == high[:2] and low[2] == 0 and high[2] == ANY_PATCH:
        return f"{low[0]}.{low[1]}.x"
    return f"{_short(low) if low > (0, 0, 0) else 'up'} to {_short(high)}"


def _short(version: Version) -> str:
    major, minor, patch = version
    if patch == ANY_PATCH:
        return f"{major}.{minor}.x"
    return f"{major}.{minor}" if patch == 0 else f"{major}.{minor}.{patch}"

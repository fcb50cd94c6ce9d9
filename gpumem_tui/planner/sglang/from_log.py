"""What an SGLang startup log says about its own launch: the release its wording points to (when it names
none), and the card its free memory implies (when it names none)."""

from __future__ import annotations

from dataclasses import dataclass

from gpumem_tui.catalog import Catalog
from gpumem_tui.catalog.schema import GpuSpec
from gpumem_tui.planner.sglang.memory import CUDA_CONTEXT_BYTES
from gpumem_tui.planner.sglang.versions import DEFAULT_VERSION, LAST_KNOWN, RC, Version, parse_version
from gpumem_tui.planner.sglang.wording import BY_KEY, releases_allowed

CANDIDATES = (
    "0.3.0", "0.3.6", "0.4.0", "0.4.1.post6", "0.4.3", "0.4.3.post3", "0.4.5", "0.4.6", "0.4.6.post2", "0.4.7",
    "0.4.7.post1", "0.4.8", "0.4.9", "0.4.9.post3", "0.5.2", "0.5.3rc2", DEFAULT_VERSION,
)  # fmt: skip
"""The first release of each log template (wording.py) and of each rule change the model follows
(versions.py, fraction.py): a log is predicted with the newest of them its wording allows."""


def version_text(version: Version) -> str:
    """(0, 4, 1, 6) as `0.4.1.post6`; a span's open end (post 99) as `0.4.2.x`."""
    major, minor, patch, post = version
    base = f"{major}.{minor}.{patch}"
    return base + ("rc" if post == RC else ".x" if post >= 99 else f".post{post}" if post else "")


def _kv_line_silent(lines: list[str]) -> bool:
    """The log shows the weights' end and the pool's end but no `KV Cache is allocated` line between them:
    the release predates that line (its absence counts only where both neighbours are shown)."""
    text = "\n".join(lines)
    return "Load weight end" in text and "Memory pool end" in text and "KV Cache is allocated" not in text


@dataclass(frozen=True)
class Release:
    version: str
    source: str
    """`given` (--sglang-version), `wording` (inferred from the lines), `default` (nothing tells)."""
    family: str | None
    note: str | None


def release_of(lines: list[str], given: str | None = None) -> Release:
    """The release whose rules a log is predicted with: given, else the newest candidate its wording allows
    (templates that appear narrow the span; the KV line's absence between its neighbours ends it before
    0.4.1.post6), else the default."""
    if given:
        return Release(given, "given", None, None)
    span = releases_allowed(lines)
    if span is None:
        note = (
            f"the log's wording does not tell its SGLang release: predicting {DEFAULT_VERSION} — pass "
            "--sglang-version to choose"
        )
        return Release(DEFAULT_VERSION, "default", None, note)
    low, high = span
    if _kv_line_silent(lines):
        high = min(high, _before(BY_KEY["kv_sizes"].since))
    found = [v for v in CANDIDATES if low <= parse_version(v) <= high]
    version = found[-1] if found else version_text(low)
    family = f"{version_text(low)} to {'the newest' if high == LAST_KNOWN else version_text(high)}"
    if low > high:
        family = f"no one release (its lines read {version_text(span[0])} to {version_text(span[1])})"
    note = (
        f"release inferred from the wording: {family}, predicted with {version}'s rules — pass "
        "--sglang-version to override"
    )
    return Release(version, "wording", family, note)


def _before(version: Version) -> Version:
    """The last release before `version` as a span's end: 0.4.1.post6 -> 0.4.1.post5."""
    major, minor, patch, post = version
    return (major, minor, patch, post - 1) if post > 0 else (major, minor, patch - 1, 99)


def card_for(catalog: Catalog, least: int) -> GpuSpec | None:
    """The smallest catalog card that holds `least` bytes and a CUDA context."""
    cards = sorted(catalog.gpus.values(), key=lambda g: (g.capacity_bytes, g.key))
    return next((g for g in cards if g.capacity_bytes >= least + CUDA_CONTEXT_BYTES), None)

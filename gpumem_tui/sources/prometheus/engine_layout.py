"""Where each engine's gauges are in the gauges' answer (`engines`), the engines in the order they are found:
made once while the answer names the same series (the reader hands the very same keys then: reader `_keys`),
so a refresh of 10,000 engines groups no series and looks up no engine's key but where a quiet query names it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpumem_tui.sources.prometheus.client import Series
from gpumem_tui.sources.prometheus.engine_facts import EngineFacts, Key, Plain
from gpumem_tui.sources.prometheus.engine_series import NAMES

Place = tuple[Key, Plain | None, dict[str, int], int, int, int]
"""An engine: its key; its Plain facts (None: not pooled, or a pool field unknown); its gauges' series, name ->
index in the answer (a later series of a name in place of an earlier); the index of the one its kv usage,
requests running and requests waiting are read from (the first name of each that it has; -1: none)."""


@dataclass(frozen=True)
class Layout:
    keys: list[Key]
    """The answer's keys it was made of (the reader's list: compared by identity)."""
    places: list[Place]
    gauged: frozenset[Key]
    """The engines the answer names: one that `waiting` alone names is found before those the pools alone
    name, so the layout holds only while every engine waiting is here."""


def places(
    usage: list[Series], keys: list[Key], waits: Mapping[Key, Series], known: EngineFacts, kept: dict[Any, Any] | None
) -> list[Place]:
    """Each engine the gauges, `waits` (requests waiting where `usage` does not carry them) or the pools name, in
    that order of finding; `kept`: what the caller's EngineFacts keep (`made_for`), where the layout is kept."""
    last = kept.get("layout") if kept is not None else None
    if last is not None and last.keys is keys and all(k in last.gauged for k in waits):
        return last.places
    found: dict[Key, dict[str, int]] = {}
    for i, (k, s) in enumerate(zip(keys, usage, strict=True)):
        found.setdefault(k, {})[s.labels.get("__name__", "")] = i
    gauged = frozenset(found)
    for k in waits:
        found.setdefault(k, {})
    for k in known.pools:
        found.setdefault(k, {})  # an engine its pool alone names is one too
    plain = known.plain
    made = [
        (k, plain.get(k), at, _first(at, NAMES.kv_usage), _first(at, NAMES.running), _first(at, NAMES.waiting))
        for k, at in found.items()
    ]
    if kept is not None and all(k in gauged for k in waits):
        kept["layout"] = Layout(keys, made, gauged)
    return made


def _first(at: dict[str, int], names: tuple[str, ...]) -> int:
    """The index of the series of the first of these names the engine has (a newer name before an older)."""
    for name in names:
        found = at.get(name)
        if found is not None:
            return found
    return -1

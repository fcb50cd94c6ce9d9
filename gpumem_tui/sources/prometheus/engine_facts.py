"""What an engine takes from the fleet's slow answers: its identity and pool fields (its pool series parsed:
vLLM's `cache_config_info`, every cache setting a label) and which engines export the counters the overview
asks for only where they are not zero (`Queries.engine_counters`). Made once per read of those where the caller
keeps them between refreshes (the overview's reader: 1,000 engines' settings parsed and keyed once, not every
15 s), else once per sample."""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gpumem_tui.sources.prometheus.client import Series
from gpumem_tui.sources.prometheus.engine_series import FIRST, NAMES, kind_of, missing
from gpumem_tui.sources.prometheus.queries import ENGINE_KEY, RATE_PENDING

Key = tuple[str | None, ...]
"""An engine: its ENGINE_KEY labels (None where absent)."""
MEASURED = {"num_gpu_blocks", "num_cpu_blocks", "kv_cache_size_tokens", "kv_cache_max_concurrency"}
"""cache_config_info labels that vLLM measures at start-up (they differ with the card), not settings."""
IDENTITY = {*ENGINE_KEY, "__name__", "container", "endpoint", "service", "instance", "cluster", "prometheus"}
NOT_SETTINGS = frozenset(IDENTITY | MEASURED)
POOL_FIELDS = ("pool_tokens", "num_gpu_blocks", "block_size", "gpu_memory_utilization")


_ABSENT: dict[str, str | None] = dict.fromkeys(ENGINE_KEY)
_KEYED = operator.itemgetter(*ENGINE_KEY)


def engine_key(labels: Mapping[str, str]) -> Key:
    """The engine a series is about: its ENGINE_KEY labels (None where absent). Read from the labels laid over
    every name absent, at one lookup each: 20,000 series a refresh at 10,000 engines, a third faster than a
    `get` per name."""
    return _KEYED({**_ABSENT, **labels})


@dataclass(frozen=True)
class Zeros:
    """Which engines' missing waiting or preemption series mean zero: those `Queries.engine_counters` names."""

    exported: set[tuple[Key, str]]
    """(engine key, FleetEngine field) of each engine that exports the field's series."""
    why: str | None = None
    """Why no engine's missing series can be read as zero (the counters' query failed), else None."""
    pending: frozenset[Key] = frozenset()
    """Engines that export the preemption counter with no rate yet (under 2 min of it): until they have one,
    the counters are asked again at each refresh, as the full read would read their 0 then."""

    @classmethod
    def of(cls, counters: list[Series] | None, failures: Mapping[str, str]) -> Zeros:
        if counters is None:
            failed = failures.get("engine_counters")
            return cls(set(), None if failed is None else f"not known to be zero: {failed}")
        exported, pending = set(), set()
        for s in counters:
            k, gauge = engine_key(s.labels), s.labels.get("gauge", "")
            if gauge == RATE_PENDING:
                pending.add(k)
            else:
                exported.add((k, gauge))
        return cls(exported, pending=frozenset(pending))

    @cached_property
    def by_engine(self) -> dict[Key, frozenset[str]]:
        """Engine key -> the fields whose series it exports (`exported`, each engine's looked up once)."""
        found: dict[Key, set[str]] = {}
        for k, name in self.exported:
            found.setdefault(k, set()).add(name)
        return {k: frozenset(names) for k, names in found.items()}

    def value(
        self, k: Key, field: str, unknown: dict[str, str], missing: str, fields: frozenset[str] | None = None
    ) -> float | None:
        """0.0 where the engine exports the field's series, else None with the reason in `unknown`. `fields`:
        `by_engine`'s for the engine, where the caller has it."""
        if field in (self.by_engine.get(k, frozenset()) if fields is None else fields):
            return 0.0
        unknown[field] = self.why or missing
        return None


@dataclass(frozen=True, eq=False)
class Plain:
    """What a pooled engine's plain refresh reads of its facts (fleet_engines' short path), looked up once per
    pools read: its pool fields, whether a missing waiting or preemption series reads as 0, its target. Equal
    to itself alone: a key hashed at the cost of its identity."""

    static: dict[str, Any]
    waiting_zero: bool
    rate_zero: bool
    target: tuple[str, str]
    """(job, instance), as the targets down are named."""


@dataclass(frozen=True)
class EngineFacts:
    pools: dict[Key, dict[str, Any]]
    """Engine key -> its identity and pool fields (FleetEngine's names; `unknown`: why a pool field is None),
    for each engine a pool names."""
    zeros: Zeros
    no_pool: str | None
    """Why no engine's pool is known (the pools' query failed); None: an engine that no pool names has no pool
    fields because it exports none (said in its kind's names)."""
    made: dict[Any, Any] = field(default_factory=dict, compare=False)
    """What fleet_engines makes of these facts for the join it was made with: the records, where each engine's
    gauges are in the answer, the engines' order."""

    @cached_property
    def plain(self) -> dict[Key, Plain]:
        """Each pooled engine whose pool fields are all known -> its Plain facts (one with an unknown pool field
        takes the general path, which words it)."""
        exports = self.zeros.by_engine
        found = {}
        for k, static in self.pools.items():
            if not static["unknown"]:
                names = exports.get(k, frozenset())
                target = (static["job"] or "", static["instance"] or "")
                found[k] = Plain(static, "requests_waiting" in names, "preemptions_per_min" in names, target)
        return found

    def with_counters(self, counters: list[Series]) -> EngineFacts:
        """These pools with the counters read again (a preemption rate was pending, or an engine came): each
        engine's Plain facts kept where its counters read as before, and the records made for the join with
        them (fleet_engines keeps a record by its Plain facts), so 10^4 records are not made again (1 s) while
        one engine's rate is pending, refresh after refresh for its first 2 minutes."""
        again = EngineFacts(self.pools, Zeros.of(counters, {}), self.no_pool)
        exports = again.zeros.by_engine
        plain = {}
        for k, was in self.plain.items():
            names = exports.get(k, frozenset())
            zeros = ("requests_waiting" in names, "preemptions_per_min" in names)
            plain[k] = was if zeros == (was.waiting_zero, was.rate_zero) else Plain(was.static, *zeros, was.target)
        again.__dict__["plain"] = plain  # functools.cached_property's
        if "join" in self.made:  # the records alone: the layout and order hold the Plain facts of before
            again.made.update(join=self.made["join"], records=self.made.get("records", {}))
        return again

    def made_for(self, join: tuple[object, ...]) -> dict[Any, Any]:
        """What is kept of these facts with `join` (its parts compared by identity): empty when it is another join
        than the one it was made with."""
        if not (len(join) == len(self.made.get("join", ())) and all(map(operator.is_, join, self.made["join"]))):
            self.made.clear()
            self.made["join"] = join  # held, so no other join can take its parts' identities
        return self.made

    @classmethod
    def of(cls, pools: list[Series], counters: list[Series] | None, failures: Mapping[str, str]) -> EngineFacts:
        found = {}
        for s in pools:
            k = engine_key(s.labels)
            found[k] = static_fields(k, *_pool(s))
        return cls(found, Zeros.of(counters, failures), failures.get("pools"))

    def fields(self, k: Key, kind: str = FIRST) -> dict[str, Any]:
        """The engine's identity and pool fields; without a pool, unknown with the reason."""
        found = self.pools.get(k)
        if found is not None:
            return found
        return static_fields(k, None, kind, self.no_pool or missing(kind).pool)


def _pool(s: Series) -> tuple[Mapping[str, str], str]:
    """A pool series as settings and its engine's kind: an info series's labels as they are; a gauge of the
    pool's size as the size vLLM's labels would name it (`kv_cache_size_tokens`)."""
    name = s.labels.get("__name__", "")
    if name in NAMES.pool_tokens:
        size = str(int(s.value)) if math.isfinite(s.value) and 0 <= s.value < 2**63 else "None"
        return {"kv_cache_size_tokens": size}, kind_of((name,))
    return s.labels, kind_of((name,))


def static_fields(
    k: Key, config: Mapping[str, str] | None, kind: str = FIRST, no_pool: str | None = None
) -> dict[str, Any]:
    """An engine's fields that only its key, its kind and its pool (`config`, None: no pool, for `no_pool`)
    give."""
    labels = dict(zip(ENGINE_KEY, k, strict=True))
    unknown: dict[str, str] = {}
    if config is None:
        config = {}
        unknown.update(dict.fromkeys(POOL_FIELDS, no_pool or missing(kind).pool))
    blocks, block = _int(config.get("num_gpu_blocks")), _int(config.get("block_size"))
    tokens = _int(config.get("kv_cache_size_tokens"))
    if tokens is None and blocks is not None and block is not None:
        tokens = blocks * block
    if not unknown and tokens is None:
        unknown["pool_tokens"] = (
            "cache_config_info gives neither kv_cache_size_tokens nor blocks x block size"
            if kind == FIRST
            else "its pool series holds no size in tokens"
        )
    return {
        "kind": kind,
        "model_name": labels["model_name"] or "?",
        "engine": labels["engine"] or None,
        "namespace": labels.get("namespace") or labels.get("kubernetes_namespace") or None,
        "pod": labels.get("pod") or labels.get("kubernetes_pod_name") or None,
        "instance": labels["instance"] or None,
        "job": labels["job"] or None,
        "pool_tokens": tokens,
        "num_gpu_blocks": blocks,
        "block_size": block,
        "cache_dtype": config.get("cache_dtype"),
        "gpu_memory_utilization": _float(config.get("gpu_memory_utilization")),
        "settings": {k: v for k, v in config.items() if k not in NOT_SETTINGS},
        "unknown": unknown,
    }


def _int(text: str | None) -> int | None:
    """A cache_config_info label as a count; None for `None` (vLLM's unset) and anything unreadable."""
    try:
        return int(text) if text is not None and text != "None" else None
    except ValueError:
        return None


def _float(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None and text != "None" else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None

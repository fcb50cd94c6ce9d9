"""The engines' series the fleet asks Prometheus for: every engine the registry gives a `fleet` entry
(sources/engines/registry.py), joined by meaning once, when the fleet's queries are first imported; and, per
engine kind, why a field is unknown where its series is missing (in that engine's own names)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from gpumem_tui.sources.engines.fleet_names import FleetNames
from gpumem_tui.sources.engines.registry import fleet_engines

NAMES = FleetNames.joined(e.fleet for e in fleet_engines() if e.fleet is not None)
SAID = " or ".join(e.label for e in fleet_engines())
"""The engines in words (`vLLM or SGLang`)."""
BY_KIND = {e.kind: e for e in fleet_engines() if e.fleet is not None}
FIRST = next(iter(BY_KIND))
"""The kind an engine is taken for where none of its series says (the first registered: vLLM)."""


def pattern(names: tuple[str, ...]) -> str:
    """A `__name__` regular expression that matches exactly these names."""
    return "|".join(names)


def kind_of(names: Iterable[str]) -> str:
    """The kind of engine whose fleet series hold one of these names; FIRST where none does."""
    for name in names:
        for kind, engine in BY_KIND.items():
            if engine.fleet is not None and name in engine.fleet.every:
                return kind
    return FIRST


def no_series(names: tuple[str, ...], label: str = "the engine") -> str:
    """Why a field is unknown where none of these series is: `no vllm:a (nor b) series`."""
    if not names:
        return f"{label} exports no such series"
    first, *others = names
    nor = f" (nor {', '.join(n.partition(':')[2] or n for n in others)})" if others else ""
    return f"no {first}{nor} series"


@dataclass(frozen=True)
class Missing:
    """Why each engine field is unknown where its series is missing, in one kind's names."""

    kv: str
    running: str
    waiting: str
    rate: str
    pool: str


@cache
def missing(kind: str) -> Missing:
    """The reasons for this kind of engine (FIRST's for a kind the fleet does not read)."""
    engine = BY_KIND.get(kind) or BY_KIND[FIRST]
    names, label = engine.fleet or FleetNames(), engine.label
    return Missing(
        kv=no_series(names.kv_usage, label),
        running=no_series(names.running, label),
        waiting=no_series(names.waiting, label),
        rate=f"{no_series(names.preemptions)} (or under 2 min of it)"
        if names.preemptions
        else f"{label} exports no preemption counter",
        pool=no_series(names.pools, label),
    )

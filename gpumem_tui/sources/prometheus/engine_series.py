"""The engines' series the fleet asks Prometheus for: every engine the registry gives a `fleet` entry
(sources/engines/registry.py), joined by meaning once, when the fleet's queries are first imported."""

from __future__ import annotations

from gpumem_tui.sources.engines.fleet_names import FleetNames
from gpumem_tui.sources.engines.registry import fleet_engines

NAMES = FleetNames.joined(e.fleet for e in fleet_engines() if e.fleet is not None)
SAID = " or ".join(e.label for e in fleet_engines())
"""The engines in words (`vLLM`)."""


def pattern(names: tuple[str, ...]) -> str:
    """A `__name__` regular expression that matches exactly these names."""
    return "|".join(names)


def no_series(names: tuple[str, ...]) -> str:
    """Why a field is unknown where none of these series is: `no vllm:a (nor b) series`."""
    first, *others = names
    nor = f" (nor {', '.join(n.partition(':')[2] or n for n in others)})" if others else ""
    return f"no {first}{nor} series"

"""The series of an engine's /metrics that the fleet reads back from Prometheus, by what each says: an engine
registry entry's `fleet` (sources/engines/registry.py). The fleet's queries ask for every registered engine's
names at once (sources/prometheus/query_table.py), so an engine joins the fleet with its registry entry."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class FleetNames:
    """Series names by meaning, each a tuple (newest name first; empty: the engine exports none)."""

    kv_usage: tuple[str, ...] = ()
    """The KV cache's usage, a fraction (a gauge per engine)."""
    running: tuple[str, ...] = ()
    """Requests running (a gauge)."""
    waiting: tuple[str, ...] = ()
    """Requests waiting (a gauge)."""
    preemptions: tuple[str, ...] = ()
    """Requests preempted (a counter)."""
    pools: tuple[str, ...] = ()
    """An info series whose labels are the KV pool's settings (vLLM's CacheConfig: `num_gpu_blocks`,
    `block_size`, `cache_dtype`, `gpu_memory_utilization`, ...), one per engine; or a gauge whose value is the
    pool's size in tokens (named in `pool_tokens` too: SGLang's `max_total_num_tokens`)."""
    pool_tokens: tuple[str, ...] = ()
    """Those of `pools` whose value, not labels, is the pool: its size in tokens."""
    sleeping: tuple[str, ...] = ()
    """The sleep state: one series per state in label `sleep_state`, 1 for the engine's (`awake` when awake)."""
    swapped: tuple[str, ...] = ()
    """Requests swapped out to CPU memory (a gauge)."""

    @property
    def every(self) -> frozenset[str]:
        """Every series name it gives, whatever it means."""
        return frozenset(n for f in fields(self) for n in getattr(self, f.name))

    @classmethod
    def joined(cls, engines: Iterable[FleetNames]) -> FleetNames:
        """Every engine's names of each meaning, in the engines' order."""
        kept = list(engines)
        return cls(**{f.name: tuple(n for e in kept for n in getattr(e, f.name)) for f in fields(cls)})

"""Requests arriving at a simulated engine: a Poisson stream, a bounded running set, a queue, preemptions."""

from __future__ import annotations

import math
import random

PREEMPT_AT_USAGE = 0.97
"""KV usage at which a full pool starts preempting running requests back to the queue."""


def poisson(rng: random.Random, mean: float) -> int:
    """A Poisson draw (Knuth for small means, a rounded normal for large ones)."""
    if mean <= 0:
        return 0
    if mean > 30:
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, count, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        count += 1
        product *= rng.random()
    return count


class Traffic:
    """The request load of one engine, stepped one second at a time."""

    def __init__(self, tokens_per_request: int, request_s: float, max_num_seqs: int):
        self.tokens_per_request, self.request_s, self.max_num_seqs = (
            tokens_per_request,
            request_s,
            max_num_seqs,
        )
        self.running = self.waiting = self.preemptions_total = 0
        self.usage = 0.0
        self._from_rate = self._to_rate = 0.0
        self._ramp_start = self._ramp_s = 0.0

    def set_rate(self, now: float, rate: float, ramp_s: float) -> None:
        self._from_rate, self._to_rate = self.rate(now), rate
        self._ramp_start, self._ramp_s = now, ramp_s

    def rate(self, now: float) -> float:
        if self._ramp_s <= 0 or now >= self._ramp_start + self._ramp_s:
            return self._to_rate
        share = (now - self._ramp_start) / self._ramp_s
        return self._from_rate + (self._to_rate - self._from_rate) * share

    def step(self, now: float, pool_tokens: int, rng: random.Random) -> None:
        """One second: arrivals join the queue, some requests finish, the pool admits what fits."""
        self.waiting += poisson(rng, self.rate(now))
        self.running -= min(self.running, poisson(rng, self.running / self.request_s))
        capacity = min(self.max_num_seqs, pool_tokens // self.tokens_per_request)
        admitted = min(self.waiting, max(0, capacity - self.running))
        self.running += admitted
        self.waiting -= admitted
        held = self.running * self.tokens_per_request * rng.uniform(0.97, 1.03)
        self.usage = min(1.0, held / pool_tokens) if pool_tokens else 0.0
        if self.usage >= PREEMPT_AT_USAGE and self.waiting > 0:
            preempted = max(1, round(self.running * 0.02))
            self.running -= preempted
            self.waiting += preempted
            self.preemptions_total += preempted

    def stop(self) -> None:
        self.running = self.waiting = 0
        self.usage = 0.0

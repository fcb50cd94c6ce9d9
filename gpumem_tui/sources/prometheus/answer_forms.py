"""What a fleet query answers, written as data: its selector and the steps PromQL applies to it, one record per
step. demo/fleet_answers.py computes each from the simulated fleet's samples as Prometheus would, and
tests/sources/prometheus/test_demo_answers.py holds every query's form equal to a real Prometheus's answer.

The forms read as the PromQL they stand for: `By("max", ("UUID",), Pick("DCGM_FI_DEV_FB_USED"))` is
`max by (UUID) (DCGM_FI_DEV_FB_USED)`. Series names are regular expressions matched whole, as `{__name__=~...}`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

LOOKBACK_S = 300.0
"""Prometheus's default lookback: an instant selector reads each series' newest sample this far back."""
Op = Literal["max", "min", "sum", "count"]
Test = Literal["!=", "==", "<", ">="]


@dataclass(frozen=True)
class Pick:
    """An instant selector: each series whose name matches `names` and whose labels pass `where` ((label, `=`,
    `!=` or `=~`, value) each), at its newest sample within `within` s before the moment less `offset` (the
    lookback; 1 h is `last_over_time(x[1h])`). `value`: the sample's, its `age` (`time() - timestamp(x)`) or
    its `time` (`timestamp(x)`)."""

    names: str
    where: tuple[tuple[str, str, str], ...] = ()
    value: Literal["value", "age", "time"] = "value"
    within: float = LOOKBACK_S
    offset: float = 0.0


@dataclass(frozen=True)
class Rate:
    """`per * rate(names[window])`: each counter's increase per second over the window, extrapolated to its
    edges as Prometheus 2.x does; none for a series with fewer than 2 samples there."""

    names: str
    window: float = 120.0
    per: float = 1.0


@dataclass(frozen=True)
class Stamped:
    """`last_over_time(timestamp(names)[within:step])`: the time of each series' newest sample as the
    subquery's steps (multiples of `step` s) last saw it."""

    names: str
    within: float
    step: float


@dataclass(frozen=True)
class By:
    """`op by (keep) (of)`: the series grouped by the kept labels, each group reduced to one."""

    op: Op
    keep: tuple[str, ...]
    of: Form


@dataclass(frozen=True)
class Only:
    """`of <test> value`: the series whose value passes (NaN passes `!=` only, as in PromQL)."""

    of: Form
    test: Test
    value: float


@dataclass(frozen=True)
class CountValues:
    """`count_values by (keep) (label, of)`: how many series have each value, the value in `label`."""

    label: str
    keep: tuple[str, ...]
    of: Form


@dataclass(frozen=True)
class Labelled:
    """`label_replace(of, label, value, "", "")`: every series with the label set to `value`."""

    of: Form
    label: str
    value: str


@dataclass(frozen=True)
class Either:
    """`a or b or ...`: the first part's series, then each other part's whose labels no earlier part has."""

    parts: tuple[Form, ...]


@dataclass(frozen=True)
class Unless:
    """`of unless on (on) other` (on None: every label but the name): `of`'s series that `other` lacks."""

    of: Form
    other: Form
    on: tuple[str, ...] | None = None


@dataclass(frozen=True)
class And:
    """`of and on (on) other`: `of`'s series that `other` has."""

    of: Form
    other: Form
    on: tuple[str, ...]


@dataclass(frozen=True)
class Top:
    """`topk by (keep) (1, of)`: the series with the largest value in each group."""

    keep: tuple[str, ...]
    of: Form


Form = Pick | Rate | Stamped | By | Only | CountValues | Labelled | Either | Unless | And | Top

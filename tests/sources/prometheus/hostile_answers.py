"""Corrupt query API answers, as a proxy between the fleet and a Prometheus could make them: each entry gives
the keywords of a query_api.Api that serves the fleet's own answers spoiled one way. The robustness tests run
every fleet command against each; bench/fleet_scale.py --hostile measures them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Items = list[dict[str, Any]]


def _values(kinds: list[Any]) -> Callable[[Items], Items]:
    """Every series' value replaced, in turn, by each of `kinds`."""

    def corrupt(items: Items) -> Items:
        return [{**item, "value": [item["value"][0], kinds[i % len(kinds)]]} for i, item in enumerate(items)]

    return corrupt


def _shapes(items: Items) -> list[Any]:
    """Each series well formed, with a wrong shape beside it (of every kind the API could be misread with)."""
    wrong: list[Any] = [
        {"metric": ["Hostname", "node-a"], "value": [1.0, "1"]},
        {"metric": {"Hostname": 5}, "value": [1.0, "1"]},
        {"metric": {"Hostname": "node-a"}, "value": "1"},
        {"metric": {"Hostname": "node-a"}, "value": [1.0]},
        {"metric": {"Hostname": "node-a"}, "value": ["1", "1"]},
        {"metric": {"Hostname": "node-a"}},
        {"value": [1.0, "1"]},
        5,
        None,
        ["metric"],
    ]
    return [part for item in items for part in (item, wrong[len(item["metric"]) % len(wrong)])]


def _long_labels(items: Items) -> Items:
    return [{**item, "metric": {**item["metric"], "pod": "p" * 2**20}} for item in items[:40]]


def _copied(times: int) -> Callable[[Items], Items]:
    return lambda items: [item for item in items for _ in range(times)]


HOSTILE: dict[str, Callable[[], dict[str, Any]]] = {
    "NaN and infinities": lambda: {"corrupt": _values(["NaN", "+Inf", "-Inf"])},
    "numbers, not strings": lambda: {"corrupt": _values([5, 1.5, None, True, ["1"], {"v": 1}])},
    "unreadable strings": lambda: {"corrupt": _values(["one", "", "0x10", "1e400", "9" * 400])},
    "wrong shapes": lambda: {"corrupt": _shapes},
    "1 MB labels": lambda: {"corrupt": _long_labels},
    "duplicated series": lambda: {"corrupt": _copied(2)},
    "copied 1,000 times": lambda: {"corrupt": _copied(1000)},
    "70 MB chunked": lambda: {"body": b" " * (70 * 2**20), "chunked": True},
    "gzip bomb": lambda: {"body": b" " * 2**28, "gzip": True},
}

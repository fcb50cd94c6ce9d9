"""`swapped`, the query added through the table alone: vLLM v0's requests swapped out to CPU memory, per
engine where not 0. An engine that swaps says how many (`requests_swapped`), in both reads and in the demo's
answers alike; one that does not has none, and its JSON leaves the key out. A small backfill of its own."""

from __future__ import annotations

import asyncio
import json

import pytest

from gpumem_tui.cli import main
from gpumem_tui.demo.fleet_answers import answers
from gpumem_tui.demo.fleet_series import FleetNodeSpec, fleet_series, series_rows
from gpumem_tui.demo.promql import Stored, answer
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
from gpumem_tui.sources.prometheus.fleet import build
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.query_table import TABLE
from tests.sources.prometheus.server import T0, backfill, require_prometheus, running

pytestmark = pytest.mark.prometheus

SPECS = (
    FleetNodeSpec("w-swap", "healthy-8b", "exported_pod", "Hostname"),
    FleetNodeSpec("w-none", "healthy-8b", "exported_pod", "Hostname"),
)
END_S, STEP_S = 60, 15
SWAPPED = {"w-swap": 3, "w-none": 0}


def _rows() -> list:
    """The fleet's samples, and each engine's swapped queue with the labels of its other vLLM series."""
    rows = list(series_rows(SPECS, END_S, STEP_S))
    engines = {
        tuple(sorted(labels.items()))
        for name, labels, _, _ in rows
        if name == "vllm:kv_cache_usage_perc" and labels.get("pod", "").startswith("vllm-w-")
    }
    for labels in map(dict, sorted(engines)):
        value = SWAPPED[labels["pod"].removeprefix("vllm-").rsplit("-", 1)[0]]
        rows += [("vllm:num_requests_swapped", labels, value, T0 + s) for s in range(0, END_S + 1, STEP_S)]
    return rows


def _text(rows: list) -> str:
    swapped = [r for r in rows if r[0] == "vllm:num_requests_swapped"]
    lines = ["# TYPE vllm:num_requests_swapped gauge"]
    for name, labels, value, at in swapped:
        lines.append(f"{name}{{{','.join(f'{k}={json.dumps(v)}' for k, v in labels.items())}}} {value} {at}")
    return fleet_series(SPECS, END_S, STEP_S).removesuffix("# EOF\n") + "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    require_prometheus()
    with running(backfill(_text(_rows()), tmp_path_factory.mktemp("swapped"))) as address:
        yield address


def _engines(capsys, url: str, *read: str) -> dict[str, dict]:
    main(["fleet", "snapshot", "--prometheus", url, "--at", str(T0 + END_S), "--json", *read])
    return {e["node"]: e for e in json.loads(capsys.readouterr().out)["engines"]}


@pytest.mark.parametrize("read", [(), ("--overview",)])
def test_an_engine_that_swaps_says_how_many(url, capsys, read):
    engines = _engines(capsys, url, *read)
    assert engines["w-swap"]["requests_swapped"] == 3.0
    assert "requests_swapped" not in engines["w-none"]


def test_the_demo_answers_swapped_as_a_real_prometheus(url):
    async def real():
        async with PrometheusClient(Connection(url)) as client:
            return await client.query(TABLE["swapped"].promql(Queries()), T0 + END_S)

    rows = _rows()
    demo = answer(TABLE["swapped"].demo(), Stored(rows), T0 + END_S)
    assert [(s.labels, s.value) for s in demo.series] == [(s.labels, s.value) for s in asyncio.run(real()).series]
    sample = build("-", T0 + END_S, answers(rows, T0 + END_S), {}, stale=stale)
    assert {e.node: e.requests_swapped for e in sample.engines} == {"w-swap": 3.0, "w-none": None}

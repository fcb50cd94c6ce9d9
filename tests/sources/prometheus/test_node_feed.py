"""One node of the backfilled fleet read from a real Prometheus as the single-node screen reads a node: the
Sample of its series (sources/prometheus/node_sample.py), judged by `check` as a node is."""

from __future__ import annotations

import asyncio

import pytest

from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
from gpumem_tui.sources.prometheus.node_feed import prometheus_node_feed
from gpumem_tui.sources.prometheus.node_sample import NO_PIDS, NodeNotFound
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.reader import FleetReader
from tests.sources.prometheus.conftest import AT

pytestmark = pytest.mark.prometheus
MIB = 2**20


def _sample(url: str, node: str):
    return asyncio.run(prometheus_node_feed(Connection(url), node, at=AT, stale=stale).sample())


def _fleet(url: str):
    async def read():
        async with PrometheusClient(Connection(url)) as client:
            return await FleetReader(Queries(), FleetRules()).read(client, AT)

    return asyncio.run(read())


def test_a_node_s_gpus_are_the_fleet_s_gpus_of_that_node_in_bytes(fleet_url):
    fleet = [g for g in _fleet(fleet_url).gpus if g.node == "node-b"]
    sample = _sample(fleet_url, "node-b")
    assert sample.hostname == "node-b" and sample.source == "prometheus"
    assert [(g.index, g.uuid, g.name) for g in sample.gpus] == [(int(g.index), g.uuid, g.card) for g in fleet]
    for gpu, read in zip(sample.gpus, fleet, strict=True):
        assert gpu.memory_used_bytes == read.used_bytes and gpu.memory_used_bytes % MIB == 0
        assert (gpu.memory_free_bytes, gpu.memory_reserved_bytes) == (read.free_bytes, read.reserved_bytes)
        assert gpu.memory_total_bytes == read.used_bytes + read.free_bytes + read.reserved_bytes


def test_an_exporter_without_reserved_leaves_it_unknown_and_says_why(fleet_url):
    sample = _sample(fleet_url, "node-c")
    assert {g.memory_reserved_bytes for g in sample.gpus} == {None}
    said = [e.message for e in sample.errors if e.gpu_index == 0]
    assert any("GPU 0 reserved_bytes: n/a: this dcgm-exporter exports no DCGM_FI_DEV_FB_RESERVED" in m for m in said)


def test_the_sample_is_as_old_as_the_node_s_newest_series(fleet_url):
    assert AT - _sample(fleet_url, "node-a").timestamp == 0
    assert AT - _sample(fleet_url, "node-e").timestamp == 90  # its exporter stopped 30 s in


def test_engines_are_the_scraper_s_records_placed_on_their_pod_s_gpus(fleet_url):
    sample = _sample(fleet_url, "node-b")
    uuids = {g.index: g.uuid for g in sample.gpus}
    assert [e.url for e in sample.engines] == [f"serving/vllm-node-b-{port}" for port in range(8000, 8004)]
    first = sample.engines[0]
    assert first.state == "ok" and first.pids == [] and first.devices == [uuids[0], uuids[1]]
    (record,) = first.records
    assert (record.engine, record.model, record.engine_index) == ("vllm", "meta-llama/Llama-3.1-70B", "0")
    assert record.kv_pool_tokens == 225536 and record.block_size is not None
    assert record.kv_usage_fraction == pytest.approx(0.5152)
    assert sample.engines[3].records[0].requests_waiting == 5


def test_pods_stand_in_for_processes_and_the_missing_pids_are_said(fleet_url):
    sample = _sample(fleet_url, "node-a")
    assert sample.processes == []
    said = [e.message for e in sample.errors if e.source == "prometheus"]
    assert said == [NO_PIDS, "GPU 0: held by pod serving/vllm-node-a-8000 (dcgm-exporter's allocation)"]
    pods = [e.message for e in _sample(fleet_url, "node-b").errors if e.message.startswith("GPU")]
    assert pods[0] == "GPU 0, 1: held by pod serving/vllm-node-b-8000 (dcgm-exporter's allocation)"
    assert [e.message for e in _sample(fleet_url, "node-f").errors][1:] == [
        "GPU 0, 1, 2, 3, 4, 5, 6, 7: no pod holds it"
    ]


def test_a_target_that_is_down_is_an_engine_down(fleet_url):
    (engine,) = _sample(fleet_url, "node-c").engines
    assert (engine.url, engine.state, engine.records) == ("node-c:8000", "down", [])


def test_nan_readings_are_unknown_with_the_reason(fleet_url):
    sample = _sample(fleet_url, "node-nan")
    (gpu,) = sample.gpus
    assert (gpu.memory_used_bytes, gpu.memory_total_bytes) == (None, None)
    assert any("FB_USED as NaN" in e.message for e in sample.errors)
    (record,) = sample.engines[0].records
    assert record.kv_usage_fraction is None and record.requests_waiting == 3
    # dropped as the live scraper's record drops it, so check's own rule names it (engine_value_implausible)
    assert record.dropped == {"kv_usage_fraction": "not a number"}
    assert "kv_usage_fraction not a number is not a reading; shown as missing" in record.notes


def test_a_node_no_series_names_is_refused(fleet_url):
    with pytest.raises(NodeNotFound, match="no dcgm-exporter or gpumem-tui export series names node 'node-zz'"):
        _sample(fleet_url, "node-zz")

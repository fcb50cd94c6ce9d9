"""Label rules (reference/fleet.md 1.2, 2.4), the selector, --at, and the API's envelope, on canned input."""

from __future__ import annotations

import json
import math

import pytest

from gpumem_tui.sources.prometheus.answers import read_vector
from gpumem_tui.sources.prometheus.client import PrometheusError, parse_time
from gpumem_tui.sources.prometheus.labels import exporter_pods, host_of, node_of, workload_of
from gpumem_tui.sources.prometheus.queries import Queries, SelectorError, parse_selector


@pytest.mark.parametrize(
    "labels, node",
    [
        ({"Hostname": "a", "hostname": "b", "instance": "c:9400"}, "a"),  # dcgm-exporter <= 4.8.2
        ({"hostname": "b", "node": "n", "instance": "c:9400"}, "b"),  # after PR #655
        ({"node": "n", "kubernetes_node": "k"}, "n"),
        ({"kubernetes_node": "k", "instance": "c:9400"}, "k"),
        ({"instance": "c:9400"}, "c"),  # bare metal: the target's host
        ({"instance": "[::1]:9400"}, "::1"),
        ({"Hostname": "", "instance": "c"}, "c"),  # an empty label names nothing (older exporters)
        ({}, None),
    ],
)
def test_the_node_is_the_first_label_that_names_it(labels, node):
    assert node_of(labels) == node


def test_host_of_keeps_a_name_without_port():
    assert host_of("node-7") == "node-7" and host_of("") is None


def test_exported_pod_is_the_workload_and_pod_the_exporter():
    labels = {"exported_namespace": "team-a", "exported_pod": "vllm-0", "namespace": "gpu-operator", "pod": "x-1"}
    assert workload_of(labels) == ("team-a", "vllm-0")
    assert exporter_pods([labels]) == {"x-1"}


def test_the_exporters_own_pod_holds_no_gpu():
    assert workload_of({"namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-7x2"}) is None
    # named otherwise, but seen as the exporter on a series that also carries exported_pod
    assert workload_of({"namespace": "monitoring", "pod": "gpu-metrics-1"}, {"gpu-metrics-1"}) is None
    assert workload_of({"namespace": "team-b", "pod": "vllm-1"}, {"gpu-metrics-1"}) == ("team-b", "vllm-1")
    assert workload_of({"kubernetes_namespace": "ns", "kubernetes_pod_name": "p"}) == ("ns", "p")
    assert workload_of({"gpu": "0"}) is None


def test_the_selector_is_added_to_every_selector():
    queries = Queries(parse_selector('{cluster="prod-eu", env=~"p.*"}'))
    for name in ("gpu_memory", "gpu_pods", "nodes_age", "nodes_seen", "engines", "pools", "preemptions"):
        assert 'cluster="prod-eu", env=~"p.*"' in getattr(queries, name), name
    assert queries.targets_down().count('cluster="prod-eu"') == 2
    assert parse_selector(None) == "" and parse_selector(" {} ") == ""


@pytest.mark.parametrize("text", ["cluster", '{cluster="x"', '{cluster="x" env="y"}', '{"x"}', "{cluster=x}"])
def test_a_selector_that_is_not_matchers_is_refused(text):
    with pytest.raises(SelectorError):
        parse_selector(text)


def test_at_reads_seconds_and_rfc3339():
    assert parse_time("1767225600") == 1767225600
    assert parse_time("2026-01-01T00:02:00Z") == 1767225720
    for bad in ("nan", "-5", "1e20", "2026-01-01"):
        with pytest.raises(ValueError):
            parse_time(bad)


CANNED = {
    # as Prometheus 2.42 answers: values are strings, NaN spelled "NaN"
    "status": "success",
    "data": {
        "resultType": "vector",
        "result": [
            {"metric": {"__name__": "DCGM_FI_DEV_FB_USED", "Hostname": "n"}, "value": [1767225720, "73400"]},
            {"metric": {"Hostname": "m"}, "value": [1767225720, "NaN"]},
        ],
    },
}


def test_the_envelope_is_read_values_as_numbers_nan_kept():
    result = read_vector("u", 200, json.dumps(CANNED).encode())
    first, second = result.series
    assert first.value == 73400 and first.timestamp == 1767225720 and first.labels["Hostname"] == "n"
    assert math.isnan(second.value)
    assert result.warnings == []


def test_an_error_envelope_is_one_line():
    body = json.dumps({"status": "error", "errorType": "bad_data", "error": "1:5: parse error:\nunexpected"}).encode()
    with pytest.raises(PrometheusError) as failure:
        read_vector("u", 400, body)
    assert failure.value.kind == "query" and str(failure.value) == "u: bad_data: 1:5: parse error: unexpected"
    with pytest.raises(PrometheusError, match="no vector result"):
        read_vector("u", 200, json.dumps({"status": "success", "data": {"resultType": "matrix"}}).encode())

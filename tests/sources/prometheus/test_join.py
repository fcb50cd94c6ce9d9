"""The join's other answers, on canned query results: engines not joined (and why), a bare-metal node with
two engines, a node name that is the exporter's pod. The found and assumed joins run against the real server."""

from __future__ import annotations

from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus.client import Result, Series
from gpumem_tui.sources.prometheus.fleet import build

AT = 1767225720.0


def _gpu(node: str, uuid: str, used_mib: float, free_mib: float, **labels: str) -> list[Series]:
    base = {"Hostname": node, "UUID": uuid, "gpu": "0", "modelName": "NVIDIA H100 80GB HBM3", **labels}
    return [
        Series({**base, "__name__": "DCGM_FI_DEV_FB_USED"}, used_mib, AT),
        Series({**base, "__name__": "DCGM_FI_DEV_FB_FREE"}, free_mib, AT),
    ]


def _engine(model: str, **labels: str) -> Series:
    return Series({"__name__": "vllm:kv_cache_usage_perc", "model_name": model, "engine": "0", **labels}, 0.5, AT)


def test_engines_not_joined_say_why_and_are_findings():
    results = {
        "gpu_memory": Result(_gpu("bare-1", "GPU-a", 40000, 40000) + _gpu("k8s-1", "GPU-b", 40000, 40000)),
        "gpu_pods": Result([Series({"Hostname": "k8s-1", "UUID": "GPU-b"}, 1, AT)]),
        "engines": Result(
            [
                _engine("m1", job="vllm", instance="bare-1:8000"),
                _engine("m2", job="vllm", instance="bare-1:8001"),
                _engine("m3", job="vllm", instance="10.0.0.9:8000", namespace="serving", pod="vllm-3"),
                _engine("m4", job="vllm", instance="elsewhere:8000"),
            ]
        ),
        "pools": Result(),
    }
    sample = build("http://p", AT, results, {}, stale=stale)
    why = {e.model_name: (e.joined, e.join_reason) for e in sample.engines}
    assert why["m1"] == ("not joined", "2 engines on node bare-1, and no pod label says which GPUs each uses")
    assert why["m3"][0] == "not joined" and why["m3"][1].startswith(
        "no dcgm-exporter series carries pod serving/vllm-3"
    )
    assert why["m4"] == ("not joined", "no dcgm-exporter series for node elsewhere")
    assert sample.coverage.joined == 0 and sample.coverage.not_joined == 4
    found = [(f.node, f.finding.code, f.finding.severity) for f in judge_fleet(sample)]
    assert found.count(("bare-1", "not_joined", "info")) == 2
    assert ("elsewhere", "not_joined", "info") in found and (None, "not_joined", "info") in found


def test_a_node_named_like_the_exporter_pod_is_warned_about():
    sample = build(
        "http://p", AT, {"gpu_memory": Result(_gpu("nvidia-dcgm-exporter-x7k2p", "GPU-a", 1, 1))}, {}, stale=stale
    )
    assert sample.warnings == [
        "node name 'nvidia-dcgm-exporter-x7k2p' looks like dcgm-exporter's own pod: "
        "NODE_NAME is unset in its environment"
    ]


def test_a_failed_query_leaves_its_fields_unknown_and_the_source_stale():
    results = {"gpu_memory": Result(_gpu("n", "GPU-a", 40000, 40000))}
    sample = build("http://p", AT, results, {"pools": "http://p/api/v1/query: execution: boom"}, stale=stale)
    assert (
        sample.state == "stale"
        and sample.unknown["pools"] == "the query failed: http://p/api/v1/query: execution: boom"
    )
    (said,) = [f for f in judge_fleet(sample) if f.finding.code == "source_stale"]
    assert said.node is None and "boom" in said.finding.explanation

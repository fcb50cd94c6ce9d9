"""Bad input from a node's `gpumem-tui export` degrades the one field or node it is about, with the reason:
a NaN reading, an exporter that went quiet, a plan query that failed (canned answers, `build` is pure)."""

from __future__ import annotations

import math

from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus.client import Result, Series
from gpumem_tui.sources.prometheus.fleet import build

AT = 1767225720.0
NODE = {"Hostname": "node-x", "job": "gpumem-tui", "instance": "node-x:9877"}
GPU = {**NODE, "gpu": "0", "UUID": "GPU-x0", "modelName": "NVIDIA H100 80GB HBM3"}
ENGINE = {**NODE, "endpoint": "http://127.0.0.1:8000", "model_name": "m", "engine": "0"}


def _memory(used: float) -> dict[str, Result]:
    fields = {"used": used, "free": 6e9, "reserved": 5e8, "total": 85.5e9}
    per_gpu = [Series({**GPU, "__name__": f"gpumem_gpu_memory_{k}_bytes"}, v, AT) for k, v in fields.items()]
    return {
        "exported_gpu_memory": Result(per_gpu),
        "exported_node_memory": Result(
            [Series({**NODE, "__name__": f"gpumem_gpu_memory_{k}_bytes"}, v, AT) for k, v in fields.items()]
        ),
        "exported_node_gpus": Result(
            [
                Series({**NODE, "modelName": GPU["modelName"], "__name__": f"gpumem_gpu_memory_{k}_bytes"}, 1, AT)
                for k in fields
            ]
        ),
    }


def _sample(age_s: float = 2.0, used: float = 79e9, **more: Result):
    failures = {name: "HTTP 503" for name, result in more.items() if result is None}
    results = {
        "gpu_memory": Result(),
        "exporters_age": Result([Series(NODE, age_s, AT)]),
        **_memory(used),
        **{name: result for name, result in more.items() if result is not None},
    }
    return build("http://p", AT, results, failures, stale=stale)


def test_a_nan_reading_of_the_exporter_is_unknown_with_the_reason():
    sample = _sample(used=math.nan)
    (node,) = sample.nodes
    (gpu,) = sample.gpus
    for record in (node, gpu):
        assert record.used_bytes is None
        assert record.unknown["used_bytes"] == "gpumem-tui export reported used as NaN: no reading"
        assert record.total_bytes == 85_500_000_000  # NVML's total, read apart


def test_a_node_whose_exporter_went_quiet_is_stale_and_says_which_exporter():
    sample = _sample(age_s=200.0)
    assert sample.stale_nodes == {"node-x": 200.0}
    (stale,) = [f for f in judge_fleet(sample) if f.finding.code == "source_stale"]
    assert stale.node == "node-x" and "newest gpumem-tui export sample is 200 s old" in stale.finding.title


def test_a_failed_plan_query_leaves_the_plan_unknown_with_the_reason():
    kv = Result([Series({**ENGINE, "__name__": "gpumem_engine_kv_cache_usage_ratio"}, 0.5, AT)])
    sample = _sample(exported_engines=kv, engine_plans=None)
    (engine,) = sample.engines
    assert engine.kv_usage_fraction == 0.5 and engine.planned_bytes is None
    assert engine.unknown["planned_bytes"] == "the query of gpumem-tui export's plans failed: HTTP 503"


def test_an_engine_on_the_node_s_loopback_is_named_by_the_node():
    """`http://127.0.0.1:8000` is every node's engine: the fleet names it `node-x:8000`, as vLLM's `instance`
    names an engine on bare metal; an address of its own is kept as it is."""
    kv = [
        Series({**ENGINE, "__name__": "gpumem_engine_kv_cache_usage_ratio"}, 0.5, AT),
        Series(
            {**ENGINE, "endpoint": "http://10.1.2.3:8001", "__name__": "gpumem_engine_kv_cache_usage_ratio"}, 0.1, AT
        ),
    ]
    sample = _sample(exported_engines=Result(kv))
    assert sorted(e.instance or "" for e in sample.engines) == ["10.1.2.3:8001", "node-x:8000"]


def test_a_node_whose_exporter_reads_no_gpu_is_listed_with_the_reason():
    """The exporter publishes (its age) but no GPU memory: NVML failed on the node. The node is there, its
    memory unknown with the reason, never a zero."""
    other = {"Hostname": "node-q", "job": "gpumem-tui", "instance": "node-q:9877"}
    sample = _sample(exporters_age=Result([Series(NODE, 2.0, AT), Series(other, 3.0, AT)]))
    (q,) = [n for n in sample.nodes if n.name == "node-q"]
    assert (q.gpus, q.used_bytes, q.data_age_s) == (0, None, 3.0)
    assert q.unknown["used_bytes"].startswith("its gpumem-tui export publishes no GPU memory")

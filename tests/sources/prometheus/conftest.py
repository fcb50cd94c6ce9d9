"""One backfilled fleet and one real Prometheus over it for the whole session; each test asks at its own time."""

from __future__ import annotations

import shutil

import pytest

from gpumem_tui.demo.fleet_series import FleetNodeSpec, fleet_series
from gpumem_tui.sources.prometheus.queries import Queries
from tests.sources.prometheus.server import (
    SERVED,
    T0,
    backfill,
    backfill_rules,
    changes_group,
    require_prometheus,
    running,
)

FLEET = (
    # Kubernetes, ServiceMonitor with honorLabels false: the workload in exported_pod, dcgm-exporter <= 4.8.2.
    # Its engine is set apart from the other Llama-3.1-8B replicas by one cache setting (config_drift).
    FleetNodeSpec("node-a", "healthy-8b", "exported_pod", "Hostname", settings={"enable_prefix_caching": "False"}),
    # Kubernetes with honorLabels: plain pod labels, dcgm-exporter after 4.8.2 (`hostname`).
    FleetNodeSpec("node-b", "busy-node", "pod", "hostname"),
    # The same setup on an idle node: every GPU (no engine) carries the exporter's own pod.
    FleetNodeSpec("node-f", "idle-node", "pod", "hostname"),
    # Bare metal, an exporter without FB_RESERVED; the engine exits about 60 s in (up == 0 after).
    FleetNodeSpec("node-c", "noisy-neighbour", "bare", "Hostname", reserved=False),
    FleetNodeSpec("node-d", "kv-pressure", "exported_pod", "Hostname"),
    # healthy-8b again, with dcgm-exporter in virtual-GPU mode: every GPU series twice (device and pod).
    FleetNodeSpec("node-g", "healthy-8b", "exported_pod", "Hostname", virtual_gpus=True),
    # The node also runs `gpumem-tui export`: the plan's findings (weights, KV pool) come from it.
    FleetNodeSpec("node-h", "wrong-precision", "exported_pod", "Hostname", exporter=True),
    # Its exporter stops after 30 s: at 120 s its newest sample is 90 s old.
    FleetNodeSpec("node-e", "k8s-two-pods", "exported_pod", "Hostname", until_s=30),
)
END_S = 150
STEP_S = 5
"""As `gpumem-tui export` samples (its default interval) and `check --demo` walks a scenario."""
AT = 1767225600 + 120
NAN_NODE = (
    'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-nan",modelName="NVIDIA H100 80GB HBM3",Hostname="node-nan",'
    'job="dcgm-exporter",instance="node-nan:9400"} NaN {t}\n'
    'DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-nan",modelName="NVIDIA H100 80GB HBM3",Hostname="node-nan",'
    'job="dcgm-exporter",instance="node-nan:9400"} 1000 {t}\n'
    'vllm:kv_cache_usage_perc{model_name="m",engine="0",job="vllm",instance="node-nan:8000"} NaN {t}\n'
    'vllm:num_requests_waiting{model_name="m",engine="0",job="vllm",instance="node-nan:8000"} 3 {t}\n'
)
"""A node whose exporter reports FB_USED as NaN (dcgm-exporter writes NaN for a field DCGM could not read), and
whose engine reports its KV usage as NaN with requests waiting."""


def fleet_text() -> str:
    text = fleet_series(FLEET, END_S, STEP_S).removesuffix("# EOF\n")
    text += "".join(NAN_NODE.replace("{t}", str(1767225600 + s)) for s in range(0, END_S + 1, STEP_S))
    return text + "# EOF\n"


@pytest.fixture(scope="session")
def fleet_blocks(tmp_path_factory):
    require_prometheus()
    return backfill(fleet_text(), tmp_path_factory.mktemp("fleet"))


@pytest.fixture(scope="session")
def fleet_url(fleet_blocks):
    with running(fleet_blocks) as url:
        yield url


def recorded_blocks(fleet_url, fleet_blocks, where, queries: Queries):
    """The test fleet with the rules' series backfilled beside it, evaluated every 5 s as the fleet is sampled
    (Prometheus offsets a group's evaluations within its interval: their moments are not the samples')."""
    from gpumem_tui.sources.prometheus.rules import rule_group

    data = where / "data"
    shutil.copytree(fleet_blocks, data, ignore=shutil.ignore_patterns(*SERVED))
    rules = where / "rules.yml"
    rules.write_text(rule_group(queries, interval_s=5), encoding="utf-8")
    backfill_rules(fleet_url, rules, (T0, T0 + END_S), 5, data)
    return data


def changes_blocks(recorded_url, recorded_data, where, queries: Queries):
    """`recorded_blocks` with the rules' change record (NODE_CHANGED) backfilled from their figures, in a second
    run of the same rule file (so at the same moments) against a server that holds the figures."""
    data = where / "data"
    shutil.copytree(recorded_data, data, ignore=shutil.ignore_patterns(*SERVED))
    rules = recorded_data.parent / "rules.yml"
    rules.write_text(changes_group(queries, 5), encoding="utf-8")
    backfill_rules(recorded_url, rules, (T0, T0 + END_S), 5, data)
    return data


@pytest.fixture(scope="session")
def recorded_data(fleet_url, fleet_blocks, tmp_path_factory):
    return recorded_blocks(fleet_url, fleet_blocks, tmp_path_factory.mktemp("recorded"), Queries(look=0.1))


@pytest.fixture(scope="session")
def recorded_url(recorded_data):
    with running(recorded_data) as url:
        yield url


@pytest.fixture(scope="session")
def changes_url(recorded_url, recorded_data, tmp_path_factory):
    """The test fleet with the rules' figures and their change record, as a live Prometheus evaluates them."""
    data = changes_blocks(recorded_url, recorded_data, tmp_path_factory.mktemp("changes"), Queries(look=0.1))
    with running(data) as url:
        yield url


@pytest.fixture(scope="session")
def vm_fleet_url(tmp_path_factory):
    """VictoriaMetrics holding the same fleet as `fleet_url`'s Prometheus (the same OpenMetrics text)."""
    from tests.sources.prometheus.victoria import backfill as vm_backfill
    from tests.sources.prometheus.victoria import require_victoria_metrics, victoria

    require_victoria_metrics()
    with victoria(tmp_path_factory.mktemp("victoria")) as url:
        vm_backfill(url, fleet_text())
        yield url

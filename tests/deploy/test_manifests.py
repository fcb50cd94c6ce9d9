"""deploy/kubernetes/: Kubernetes's own kinds validated against its schemas with `kubernetes-validate`
(strict: an unknown field fails), the operator's kinds against crd_schemas.py, the pieces pointing at each
other (labels, port names, namespace), the container's arguments parsed by the exporter's own parser, and
the scrape job of without-operator/prometheus-scrape.yaml run by a real Prometheus (conftest.py) and checked
by vmagent."""

from __future__ import annotations

import copy
import json
import subprocess

import jsonschema
import kubernetes_validate
import pytest
import yaml

from gpumem_tui.cli import build_parser
from tests.deploy.conftest import DEPLOY, NODES, SCRAPE_CONFIG, query, require_binary
from tests.deploy.crd_schemas import SCHEMAS
from tests.sources.prometheus.server import require_prometheus

KUBERNETES = DEPLOY / "kubernetes"
VERSIONS = ("1.30", "1.37")
"""The oldest Kubernetes minor release still in the common managed offerings' support, and the newest schema
kubernetes-validate ships."""


def manifests() -> dict[str, dict]:
    """kind -> the one object of that kind in deploy/kubernetes/, as `kubectl apply -f deploy/kubernetes/`
    reads them (the files of the folder, not of its subfolders)."""
    found = {}
    for path in sorted(KUBERNETES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            assert doc["kind"] not in found, f"{path.name}: a second {doc['kind']}"
            found[doc["kind"]] = doc
    return found


def test_the_namespace_is_applied_first():
    """`kubectl apply -f deploy/kubernetes/` applies the files in name order: the namespace must exist before
    the objects in it."""
    first = sorted(KUBERNETES.glob("*.yaml"))[0]
    assert yaml.safe_load(first.read_text(encoding="utf-8"))["kind"] == "Namespace"


def pod_spec() -> dict:
    return manifests()["DaemonSet"]["spec"]["template"]["spec"]


@pytest.mark.parametrize("version", VERSIONS)
def test_kubernetes_kinds_pass_the_schemas(version):
    core = {kind: doc for kind, doc in manifests().items() if kind not in SCHEMAS}
    assert set(core) == {"Namespace", "ServiceAccount", "Service", "DaemonSet"}
    for doc in core.values():
        kubernetes_validate.validate(doc, version, strict=True)


def test_a_misspelt_field_fails_the_schema():
    daemonset = copy.deepcopy(manifests()["DaemonSet"])
    daemonset["spec"]["template"]["spec"]["hostPid"] = True
    with pytest.raises(kubernetes_validate.ValidationError, match="hostPid"):
        kubernetes_validate.validate(daemonset, VERSIONS[-1], strict=True)


def test_operator_kinds_pass_their_schemas():
    found = manifests()
    for kind, schema in SCHEMAS.items():
        jsonschema.validate(found[kind], schema)
    monitor = copy.deepcopy(found["ServiceMonitor"])
    monitor["spec"]["endpoints"][0]["honourLabels"] = True
    with pytest.raises(jsonschema.ValidationError, match="honourLabels"):
        jsonschema.validate(monitor, SCHEMAS["ServiceMonitor"])


def test_the_pieces_point_at_each_other():
    found = manifests()
    daemonset, service, monitor = found["DaemonSet"], found["Service"], found["ServiceMonitor"]
    namespaces = {doc["metadata"].get("namespace") for kind, doc in found.items() if kind != "Namespace"}
    assert namespaces == {found["Namespace"]["metadata"]["name"]}
    pod_labels = daemonset["spec"]["template"]["metadata"]["labels"]
    assert daemonset["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    [container] = pod_spec()["containers"]
    [port] = container["ports"]
    [service_port] = service["spec"]["ports"]
    assert port["name"] == service_port["name"] == service_port["targetPort"] == monitor["spec"]["endpoints"][0]["port"]
    for probe in (container["readinessProbe"], container["livenessProbe"]):
        assert probe["httpGet"] == {"path": "/metrics", "port": port["name"]}
    assert pod_spec()["serviceAccountName"] == found["ServiceAccount"]["metadata"]["name"]


def test_the_optional_network_policy_admits_the_scrapers_to_the_exporter_port():
    """Not applied with the folder (a subfolder); valid, in the namespace, on the exporter's pods and port."""
    policy = yaml.safe_load((KUBERNETES / "optional" / "networkpolicy.yaml").read_text(encoding="utf-8"))
    for version in VERSIONS:
        kubernetes_validate.validate(policy, version, strict=True)
    found = manifests()
    assert "NetworkPolicy" not in found
    assert policy["metadata"]["namespace"] == found["Namespace"]["metadata"]["name"]
    pod_labels = found["DaemonSet"]["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    [rule] = policy["spec"]["ingress"]
    [container] = pod_spec()["containers"]
    assert rule["ports"] == [{"port": container["ports"][0]["name"], "protocol": "TCP"}]
    [peer] = rule["from"]
    [names] = peer["podSelector"]["matchExpressions"]
    assert (names["key"], names["operator"]) == ("app.kubernetes.io/name", "In")
    assert set(names["values"]) == {"prometheus", "prometheus-agent", "vmagent", "vmsingle", "alloy"}
    # the scrapers' pods in any namespace: both selectors in one peer (ANDed); a peer without the namespace
    # selector is the policy's own namespace only, one of them alone a peer of its own (ORed)
    assert peer.keys() == {"namespaceSelector", "podSelector"}
    assert all(peer["namespaceSelector"] == {} for peer in rule["from"])


def test_the_container_runs_the_exporter_on_the_pod_address():
    """No `command`: the image's entrypoint (`gpumem-tui export`) runs, with these arguments as the
    exporter's own parser reads them once the kubelet has put the pod's address in."""
    [container] = pod_spec()["containers"]
    assert "command" not in container
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    argv = [arg.replace("$(POD_IP)", "10.0.0.7") for arg in container["args"]]
    args = build_parser().parse_args(["export", *argv])
    assert (args.listen.host, args.listen.port, args.allow_remote) == (
        "10.0.0.7",
        container["ports"][0]["containerPort"],
        True,
    )


def test_the_pod_asks_for_what_it_needs_and_no_more():
    spec = pod_spec()
    [container] = spec["containers"]
    assert spec["hostPID"] is True and spec["runtimeClassName"] == "nvidia"
    assert not spec.get("hostNetwork") and spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] != 0
    security = container["securityContext"]
    assert security["capabilities"] == {"drop": ["ALL"]} and not security["privileged"]
    assert security["readOnlyRootFilesystem"] and not security["allowPrivilegeEscalation"]
    assert all(mount["readOnly"] for mount in container["volumeMounts"])
    assert {"requests", "limits"} <= set(container["resources"])


def test_the_scrape_config_parses_with_its_kubernetes_discovery():
    """vmagent (VictoriaMetrics) parses the file as shipped, strictly (an unknown field fails). Debian's
    promtool cannot: its Prometheus is built without Kubernetes discovery, so promtool checks the job with its
    discovery swapped for a file (conftest.py's Prometheus loads exactly that)."""
    require_binary("vmagent", "victoria-metrics")
    run = subprocess.run(
        ["vmagent", f"-promscrape.config={SCRAPE_CONFIG}", "-dryRun", "-loggerLevel=ERROR"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr


@pytest.mark.prometheus
def test_the_scrape_job_labels_each_node_as_the_fleet_reads_it(deploy_prometheus, capsys, tmp_path):
    from gpumem_tui.cli import main

    [job] = yaml.safe_load(SCRAPE_CONFIG.read_text(encoding="utf-8"))["scrape_configs"]
    (tmp_path / "check.yml").write_text(yaml.safe_dump({"scrape_configs": [
        {**{k: v for k, v in job.items() if k != "kubernetes_sd_configs"}, "static_configs": [{"targets": ["a:1"]}]}
    ]}), encoding="utf-8")  # fmt: skip
    check = subprocess.run(["promtool", "check", "config", str(tmp_path / "check.yml")], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    up = query(deploy_prometheus, f'up{{job="{job["job_name"]}"}} == 1')
    # The pod of another component at node-1's address was dropped by the job's keep rule.
    assert sorted(s["metric"]["instance"] for s in up) == sorted(NODES)
    for series in query(deploy_prometheus, f'gpumem_gpu_memory_used_bytes{{job="{job["job_name"]}"}}'):
        labels = series["metric"]
        assert labels["Hostname"] == labels["node"] == labels["instance"] and "pod" not in labels, labels
    pods = {
        s["metric"].get("pod")
        for s in query(deploy_prometheus, 'gpumem_engine_kv_cache_pool_tokens{Hostname="node-2"}')
    }
    assert pods and None not in pods and not any(pod.startswith("gpumem-tui") for pod in pods), pods
    assert main(["fleet", "snapshot", "--prometheus", deploy_prometheus, "--json"]) == 0
    snapshot = json.loads(capsys.readouterr().out)
    assert {n["name"] for n in snapshot["nodes"]} == set(NODES)
    processes = [p for g in snapshot["gpus"] if g["node"] == "node-3" for p in g["processes"] if p["used_bytes"]]
    assert [(p["name"], p["pod"]) for p in processes] == [("python3", None)]


@pytest.mark.prometheus
def test_the_prometheus_rule_carries_rules_promtool_accepts(tmp_path):
    require_prometheus()
    rule = manifests()["PrometheusRule"]
    rules = tmp_path / "rules.yml"
    rules.write_text(yaml.safe_dump(rule["spec"]), encoding="utf-8")
    check = subprocess.run(["promtool", "check", "rules", str(rules)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr

"""`--node-label` and `--pod-label`: with a label named, only that one names a node (dcgm-exporter's series)
or a workload pod (the GPU's holder); `auto` keeps the order of labels.py. Against the real server over
conftest.FLEET (node-b and node-f say `hostname`, the others `Hostname`; node-a, d, e, g, h put the workload
in `exported_pod`, node-b in `pod`; node-c is bare metal)."""

from __future__ import annotations

import asyncio
import json

import pytest

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.cli import main
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus.client import Connection
from gpumem_tui.sources.prometheus.labels import AUTO, LabelChoice
from gpumem_tui.sources.prometheus.node_feed import NodeFeed, prometheus_node_feed
from tests.sources.prometheus.conftest import AT

pytestmark = pytest.mark.prometheus


def _snapshot(capsys, url: str, *extra: str) -> dict:
    assert main(["fleet", "snapshot", "--prometheus", url, "--at", str(AT), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def _joined(snap: dict) -> dict[str, str]:
    return {e["pod"] or e["instance"]: e["joined"] for e in snap["engines"]}


def test_a_node_label_given_is_the_only_one_read(fleet_url, capsys):
    auto = _snapshot(capsys, fleet_url)
    assert auto == _snapshot(capsys, fleet_url, "--node-label", "auto")
    lower = _snapshot(capsys, fleet_url, "--node-label", "hostname")
    # node-h is there through its gpumem-tui export, whose series always name the node `Hostname`
    assert [n["name"] for n in lower["nodes"]] == ["node-b", "node-f", "node-h"]
    upper = _snapshot(capsys, fleet_url, "--node-label", "Hostname")
    assert "node-b" not in {n["name"] for n in upper["nodes"]} and "node-a" in {n["name"] for n in upper["nodes"]}
    by_target = _snapshot(capsys, fleet_url, "--node-label", "instance")
    names = {n["name"] for n in by_target["nodes"]}
    assert "node-c" in names and "10.1.0.2" in names and "node-a" not in names


def test_a_pod_label_given_is_the_only_one_read(fleet_url, capsys):
    auto = _joined(_snapshot(capsys, fleet_url))
    assert auto["vllm-node-a-8000"] == "found" and auto["vllm-node-b-8000"] == "found"
    exported = _joined(_snapshot(capsys, fleet_url, "--pod-label", "exported_pod"))
    assert exported["vllm-node-a-8000"] == "found" and exported["vllm-node-b-8000"] == "not joined"
    plain = _snapshot(capsys, fleet_url, "--pod-label", "pod")
    assert _joined(plain)["vllm-node-a-8000"] == "not joined" and _joined(plain)["vllm-node-b-8000"] == "found"
    # the exporter's own pod, which `pod` names on node-a's GPUs, is still no workload
    assert all("dcgm-exporter" not in pod for g in plain["gpus"] for pod in g["pods"])


@pytest.mark.parametrize("option", ["--node-label", "--pod-label"])
def test_a_bad_label_option_is_one_line_and_exit_2(capsys, option):
    code = main(["fleet", "snapshot", "--prometheus", "http://127.0.0.1:9", option, "nodename"])
    err = capsys.readouterr().err
    assert code == 2 and "invalid choice: 'nodename'" in err and len(err.strip().splitlines()) == 1
    assert main(["fleet", "check", "--prometheus", "http://127.0.0.1:9", option, "nodename"]) == 3


def test_label_options_beside_demo_are_refused(capsys):
    assert main(["fleet", "snapshot", "--demo", "--node-label", "hostname"]) == 2
    assert "--node-label is for --prometheus" in capsys.readouterr().err


def test_an_engine_the_pod_label_leaves_unjoined_says_why_it_has_no_plan(fleet_url, capsys):
    plain = _snapshot(capsys, fleet_url, "--pod-label", "pod")
    (a,) = [e for e in plain["engines"] if e["pod"] == "vllm-node-a-8000"]
    assert a["planned_bytes"] is None
    assert a["unknown"]["planned_bytes"] == "it is not joined to its GPUs, so their card is not known"


def _check(capsys, url: str, *extra: str) -> dict:
    main(["fleet", "check", "--prometheus", url, "--at", str(AT), "--json", *extra])
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("read", ["--overview", "--full"])
def test_a_node_that_runs_gpumem_tui_export_is_one_node_whatever_label_names_it(fleet_url, capsys, read):
    """With `--node-label instance` dcgm-exporter names node-h by its exporter pod's address (10.1.6.2), and
    node-h's gpumem-tui export names it `node-h` (its own `Hostname`, and its target's host): the GPUs both
    report make them one node, named as the option says, its findings on it and its model's GPUs counted
    once, as with the default labels."""
    auto = _check(capsys, fleet_url, read)
    by_target = _check(capsys, fleet_url, read, "--node-label", "instance")
    assert by_target["coverage"] == auto["coverage"]
    assert "node-h" not in {f["node"] for f in by_target["findings"]}
    h = sorted((f["severity"], f["code"], f["gpu_index"]) for f in auto["findings"] if f["node"] == "node-h")
    assert h == sorted(
        (f["severity"], f["code"], f["gpu_index"]) for f in by_target["findings"] if f["node"] == "10.1.6.2"
    )
    used = {m["model_name"]: (m["used_bytes"], m["planned_bytes"]) for m in auto["models"]}
    assert used == {m["model_name"]: (m["used_bytes"], m["planned_bytes"]) for m in by_target["models"]}


def _node_check(capsys, url: str, node: str, *extra: str) -> dict:
    argv = ["check", "--prometheus", url, "--node", node, "--at", str(AT), "--json", *extra]
    code = main(argv)
    out, err = capsys.readouterr()
    assert err == "" and code in (0, 1, 2), err
    return json.loads(out)


def test_the_node_read_takes_the_node_label_and_keeps_the_node_s_own_exporter(fleet_url, capsys):
    """`check --prometheus --node 10.1.6.2 --node-label instance` is node-h as the fleet names it under that label:
    its GPUs, engines and the findings its gpumem-tui export raised (which name it `node-h`) are read as with the
    default labels, and where its findings and `fleet check --node-label instance`'s for 10.1.6.2 differ, it
    says why."""
    auto = _node_check(capsys, fleet_url, "node-h")
    by_target = _node_check(capsys, fleet_url, "10.1.6.2", "--node-label", "instance")
    assert {"kv_pool_short", "weights_mismatch"} <= {f["code"] for f in auto["findings"]}  # its exporter's
    assert sorted((f["code"], f["severity"], f["gpu_index"]) for f in by_target["findings"]) == sorted(
        (f["code"], f["severity"], f["gpu_index"]) for f in auto["findings"]
    )
    assert [(p["endpoint"], p["planned_bytes"]) for p in by_target["plans"]] == [
        (p["endpoint"], p["planned_bytes"]) for p in auto["plans"]
    ]
    fleet = [f for f in _check(capsys, fleet_url, "--node-label", "instance")["findings"] if f["node"] == "10.1.6.2"]
    mine = {(f["code"], f["severity"]) for f in by_target["findings"]}
    theirs = {(f["code"], f["severity"]) for f in fleet}
    said = {(d["code"], d["severity"], d["only_in"]) for d in by_target["fleet_differs"]}
    assert said == {(c, s, "node") for c, s in mine - theirs} | {(c, s, "fleet") for c, s in theirs - mine}
    assert all(d["why"] for d in by_target["fleet_differs"])


def test_the_node_s_screen_under_node_label_is_the_fleet_s_node(fleet_url):
    """The feed `enter` opens on the fleet screen under `--node-label instance` (and `--prometheus --node` alone):
    the Sample the default labels give node-h, and forensics over the same history."""

    def read(node: str, labels: LabelChoice):
        feed = prometheus_node_feed(Connection(fleet_url), node, at=AT, history_s=120, labels=labels, stale=stale)
        past = feed.past()
        assert past is not None
        return asyncio.run(feed.sample()), list(past.read())

    (auto, auto_past), (mine, past) = read("node-h", AUTO), read("10.1.6.2", LabelChoice("instance"))
    assert mine.hostname == "10.1.6.2"
    assert (mine.gpus, mine.engines, mine.processes) == (auto.gpus, auto.engines, auto.processes)
    assert [s.timestamp for s in past] == [s.timestamp for s in auto_past] and len(past) > 1


def test_enter_on_the_fleet_screen_passes_the_node_label_on(fleet_url, monkeypatch):
    """`enter` on 10.1.6.2 of the fleet screen under `--node-label instance` opens the node's screen on the node
    the fleet names, with the findings its gpumem-tui export raised (judged with the fleet's, as check does)."""
    ran: list[GpuMemApp] = []
    monkeypatch.setattr(GpuMemApp, "run", lambda self, **_: ran.append(self))
    assert main(["fleet", "--prometheus", fleet_url, "--at", str(AT), "--node-label", "instance"]) == 0
    (app,) = ran
    assert app.fleet is not None and app.fleet.open_node is not None
    node = app.fleet.open_node("10.1.6.2")  # what enter on its row opens
    assert isinstance(node.feed, NodeFeed) and node.also is not None
    sample = asyncio.run(node.feed.sample())
    assert sample.hostname == "10.1.6.2" and sample.engines
    assert {"kv_pool_short", "weights_mismatch"} <= {f.code for f in node.also([])}


def test_a_node_the_chosen_label_does_not_name_says_which_label_was_read(fleet_url, capsys):
    argv = ["check", "--prometheus", fleet_url, "--node", "node-h", "--at", str(AT), "--node-label", "instance"]
    assert main(argv) == 3
    err = capsys.readouterr().err
    said = "gpumem-tui: no dcgm-exporter or gpumem-tui export series names node 'node-h' by its instance label"
    assert err.startswith(said)
    assert "(--node-label instance)" in err and err.count("\n") == 1

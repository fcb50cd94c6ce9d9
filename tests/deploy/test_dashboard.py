"""deploy/grafana/gpumem-tui.json: its structure as Grafana reads it (unique panel ids, a datasource and a query
on every target, no variable used that is not defined), and every panel's query and every variable's values
answered by a real Prometheus scraping demo exporters (conftest.py), the variables set to match all as
Grafana's "All" does (`allValue` `.*`). Grafana itself is not run: docs/deploy.md says what that leaves."""

from __future__ import annotations

import json
import re
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest

from tests.deploy.conftest import DEPLOY, query

DASHBOARD = DEPLOY / "grafana" / "gpumem-tui.json"
DATASOURCE = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
BUILTIN = {"__rate_interval": "1m", "__interval": "15s", "__range": "1h"}
"""Grafana's own interval variables, as it would set them for a 1 h view of 1 s scrapes (rate_interval: at
least four scrapes)."""
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")
LABEL_VALUES = re.compile(r"label_values\((?:(.*),\s*)?(\w+)\)")


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def panels(board: dict) -> Iterator[dict]:
    """Every panel, those inside collapsed rows included."""
    for panel in board["panels"]:
        yield panel
        yield from panel.get("panels", [])


def targets(board: dict) -> Iterator[tuple[dict, dict]]:
    for panel in panels(board):
        for target in panel.get("targets", []):
            yield panel, target


def variables(board: dict) -> dict[str, dict]:
    return {v["name"]: v for v in board["templating"]["list"]}


def used(text: str) -> set[str]:
    return {next(g for g in m.groups() if g) for m in VARIABLE.finditer(text)}


def match_all(text: str, names: set[str]) -> str:
    """`text` with each dashboard variable set to `.*` and Grafana's interval variables to theirs."""
    values = {**{name: ".*" for name in names}, **BUILTIN}
    return VARIABLE.sub(lambda m: values[next(g for g in m.groups() if g)], text)


def test_the_dashboard_is_one_grafana_reads():
    board = dashboard()
    assert board["schemaVersion"] >= 39 and board["uid"] and board["title"]
    assert [i["name"] for i in board["__inputs"]] == ["DS_PROMETHEUS"]
    ids = [p["id"] for p in panels(board)]
    assert len(ids) == len(set(ids)), f"panel ids repeat: {sorted(ids)}"
    names = set(variables(board))
    for panel, target in targets(board):
        assert (target.get("datasource") or panel.get("datasource")) == DATASOURCE, panel["title"]
        assert target.get("expr", "").strip() and target["refId"], panel["title"]
        assert target["instant"] != target["range"], f"{panel['title']}: an instant or a range query"
    for panel in panels(board):
        assert panel["type"] == "row" or panel.get("targets"), f"{panel['title']}: no query"
        text = " ".join([panel["title"], *(t["expr"] for t in panel.get("targets", []))])
        assert used(text) <= names | set(BUILTIN), f"{panel['title']}: {used(text) - names - set(BUILTIN)}"
        assert panel.get("repeat") in names | {None}
    for variable in variables(board).values():
        assert variable["datasource"] == DATASOURCE and LABEL_VALUES.fullmatch(variable["definition"])
        assert used(variable["definition"]) <= names, variable["name"]
        # "All" must match series that lack the label (a finding with no engine, an engine in no pod).
        assert variable["includeAll"] and variable["allValue"] == ".*", variable["name"]


def test_the_structure_check_fails_on_a_variable_nobody_defined():
    board = dashboard()
    board["panels"][1]["targets"][0]["expr"] += ' or up{job="$cluster"}'
    names = set(variables(board))
    assert "cluster" in used(json.dumps(board["panels"][1]["targets"])) - names


@pytest.mark.prometheus
def test_every_panel_query_answers(deploy_prometheus):
    board = dashboard()
    names = set(variables(board))
    now = time.time()
    silent = []
    for panel, target in targets(board):
        promql = match_all(target["expr"], names)
        window = {} if target["instant"] else {"start": str(now - 30), "end": str(now), "step": "1"}
        if not query(deploy_prometheus, promql, **({"time": str(now)} | window)):
            silent.append(f"{panel['title']} {target['refId']}: {promql}")
    assert silent == []


@pytest.mark.prometheus
def test_every_variable_has_values(deploy_prometheus):
    board = dashboard()
    names = set(variables(board))
    for name, variable in variables(board).items():
        selector, label = LABEL_VALUES.fullmatch(match_all(variable["definition"], names)).groups()
        params = urllib.parse.urlencode({"match[]": selector} if selector else {})
        with urllib.request.urlopen(f"{deploy_prometheus}/api/v1/label/{label}/values?{params}", timeout=10) as r:
            values = json.load(r)["data"]
        assert [v for v in values if v], f"{name}: no values of {label}"


@pytest.mark.prometheus
def test_the_gpu_panel_draws_the_plan_under_what_nvml_measures(deploy_prometheus):
    """One GPU of the busy node as the repeated panel draws it: the bands stacked add up to the plan's share
    of the card, and the used line is NVML's figure for that GPU as the exporter published it."""
    board = dashboard()
    [panel] = [p for p in panels(board) if p.get("repeat") == "gpu"]
    one = {"node": "node-1", "gpu": "0"}
    answers = {}
    for target in panel["targets"]:
        promql = VARIABLE.sub(lambda m: one[next(g for g in m.groups() if g)], target["expr"])
        answers[target["refId"]] = {
            s["metric"].get("band", ""): float(s["value"][1]) for s in query(deploy_prometheus, promql)
        }
    planned = query(deploy_prometheus, 'gpumem_plan_bytes{Hostname="node-1", gpu="0"}')
    assert set(answers["A"]) == {"weights", "non_torch", "activations", "cuda_graphs", "kv_cache"}
    assert sum(answers["A"].values()) == sum(
        float(s["value"][1]) for s in planned if s["metric"]["band"] in answers["A"]
    )
    [used] = query(deploy_prometheus, 'gpumem_gpu_memory_used_bytes{Hostname="node-1", gpu="0"}')
    assert answers["B"] == {"": float(used["value"][1])}
    assert answers["D"][""] > answers["B"][""] > 0
    # dcgm-exporter's MiB in bytes: the simulated node's figure, whole MiB.
    assert answers["C"][""] % 2**20 == 0 and answers["C"][""] > 0

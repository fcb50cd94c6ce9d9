"""`gpumem-tui check --prometheus URL --node N` against a real Prometheus: the node judged as a node is, and
one answer per question: its findings and `fleet check`'s for node N agree on codes and severities, or the
check says where they differ and why."""

from __future__ import annotations

import json
import shutil

import pytest

from gpumem_tui.cli import main
from tests.sources.prometheus.conftest import AT, FLEET
from tests.sources.prometheus.server import running
from tests.sources.prometheus.test_fleet_failures import ADMIN_TEST, PASSWORD_HASH

NOT_FOUND = "gpumem-tui: no dcgm-exporter or gpumem-tui export series names node"

pytestmark = pytest.mark.prometheus
NODES = [spec.name for spec in FLEET] + ["node-nan"]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_each_node_s_check_agrees_with_fleet_check_or_says_why_not(fleet_url, capsys):
    code, out, _ = _run(capsys, "fleet", "check", "--prometheus", fleet_url, "--at", str(AT), "--json")
    fleet = json.loads(out)["findings"]
    explained = 0
    for node in NODES:
        code, out, err = _run(capsys, "check", "--prometheus", fleet_url, "--node", node, "--at", str(AT), "--json")
        assert err == "" and code in (0, 1, 2), (node, err)
        checked = json.loads(out)
        mine = {(f["code"], f["severity"]) for f in checked["findings"]}
        theirs = {(f["code"], f["severity"]) for f in fleet if f["node"] == node}
        said = {(d["code"], d["severity"], d["only_in"]) for d in checked["fleet_differs"]}
        assert said == {(c, s, "node") for c, s in mine - theirs} | {(c, s, "fleet") for c, s in theirs - mine}, node
        assert all(d["why"] for d in checked["fleet_differs"]), (node, checked["fleet_differs"])
        explained += len(said)
        assert checked["exit_code"] == {"critical": 2, "warning": 1}.get(checked["worst"], 0)
    assert explained  # node-h's plan findings: the fleet makes no plans of its own


@pytest.mark.parametrize(
    ("node", "codes"),
    [
        ("node-a", {("headroom_low", "info")}),
        ("node-c", {("engine_down", "critical")}),
        ("node-d", {("headroom_low", "info"), ("kv_saturated", "warning")}),
        ("node-e", {("source_stale", "warning")}),
        ("node-f", set()),
        ("node-nan", {("engine_value_implausible", "warning")}),  # its engine's KV usage is NaN
    ],
)
def test_the_node_is_judged_by_check_s_own_code(fleet_url, capsys, node, codes):
    code, out, _ = _run(capsys, "check", "--prometheus", fleet_url, "--node", node, "--at", str(AT), "--json")
    checked = json.loads(out)
    assert {(f["code"], f["severity"]) for f in checked["findings"]} == codes
    assert checked["source"] == "prometheus"
    assert checked["fleet_differs"] == [] or node == "node-nan"
    assert checked["timestamp"] == AT - (90 if node == "node-e" else 0)


def test_the_text_says_where_the_fleet_differs(fleet_url, capsys):
    code, out, _ = _run(capsys, "check", "--prometheus", fleet_url, "--node", "node-h", "--at", str(AT))
    assert code == 2
    assert out.splitlines()[1].startswith(f"check: node node-h in Prometheus {fleet_url} at 2026-01-01 00:02:00 UTC")
    # vLLM's metrics do not say the engine's max length: the model's maximum is assumed, so the context that
    # would not fit is said as info, never an alarm; the fleet's plan says the same as a plan_note
    said = "fleet: context_too_long (info) here, not in `fleet check`: the fleet plans each engine from its"
    assert said in out
    assert "(if it serves its model's full context)" in out and "is its model's maximum, assumed" in out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--node", "node-zz"], f"{NOT_FOUND} 'node-zz' in the last hour"),
        # quotes, backslashes and regex characters are the name's own: the server takes every query
        (["--node", 'a"b\\c.d(e'], f"{NOT_FOUND} 'a\"b\\\\c.d(e'"),
        ([], "gpumem-tui: check: --prometheus URL and --node NAME go together"),
        (["--node", "node-a", "--at", "yesterday"], "gpumem-tui: check: --at 'yesterday'"),
        (["--node", "node-a", "--selector", "cluster"], "gpumem-tui: check: --selector 'cluster'"),
    ],
)
def test_bad_input_is_one_line_and_unknown(fleet_url, capsys, argv, said):
    code, out, err = _run(capsys, "check", "--prometheus", fleet_url, *argv)
    assert (code, out) == (3, "")
    assert err.startswith(said) and err.count("\n") == 1, err


def test_a_prometheus_that_does_not_answer_is_unknown(capsys):
    code, out, err = _run(capsys, "check", "--prometheus", "http://127.0.0.1:9", "--node", "node-a")
    assert (code, out) == (3, "")
    assert err.startswith("gpumem-tui: Prometheus cannot be reached: http://127.0.0.1:9") and err.count("\n") == 1


def test_401_until_the_credentials_are_sent(fleet_blocks, tmp_path, capsys):
    data = tmp_path / "data"
    shutil.copytree(fleet_blocks, data)
    web = tmp_path / "web.yml"
    web.write_text(f"basic_auth_users:\n  admin: {PASSWORD_HASH}\n", encoding="utf-8")
    with running(data, web) as url:
        code, out, err = _run(capsys, "check", "--prometheus", url, "--node", "node-a", "--at", str(AT))
        assert (code, out) == (3, "") and err.count("\n") == 1
        assert err.startswith("gpumem-tui: Prometheus refused the credentials") and "HTTP 401" in err
        argv = ["check", "--prometheus", url, "--node", "node-a", "--at", str(AT), "--header", ADMIN_TEST, "--json"]
        code, out, _ = _run(capsys, *argv)
        assert code == 0 and json.loads(out)["findings"][0]["code"] == "headroom_low"


def test_the_selector_narrows_every_query_of_the_node(fleet_url, capsys):
    argv = ["check", "--prometheus", fleet_url, "--node", "node-d", "--at", str(AT), "--json"]
    code, out, _ = _run(capsys, *argv, "--selector", '{job=~"dcgm-exporter|vllm"}')
    assert {f["code"] for f in json.loads(out)["findings"]} == {"headroom_low", "kv_saturated"}
    code, out, _ = _run(capsys, *argv, "--selector", '{job="vllm"}')  # no dcgm-exporter series left
    assert code == 3 and out == ""
    code, out, _ = _run(capsys, *argv, "--selector", '{job="dcgm-exporter"}')  # no vLLM series left
    checked = json.loads(out)
    assert {f["code"] for f in checked["findings"]} == {"headroom_low"} and checked["plans"] == []

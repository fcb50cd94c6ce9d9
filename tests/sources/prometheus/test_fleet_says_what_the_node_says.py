"""`fleet check` says what the node's `check --prometheus URL --node N` says of the same node: where the fleet
judges a code the node's rules also decide, its finding carries the node's own words (title, and where both
read the same numbers, explanation and advice), computed here from the node's check, never written twice."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.cli import main
from tests.sources.prometheus.conftest import AT, FLEET

pytestmark = pytest.mark.prometheus
NODES = [spec.name for spec in FLEET]
WORDED = {"engine_down", "kv_saturated", "headroom_low", "plan_note", "kv_pool_short", "weights_mismatch"}
"""Codes the fleet judges itself that a node's rules also decide."""


def _json(capsys, *argv: str) -> dict:
    main(list(argv))
    return json.loads(capsys.readouterr().out)


def _own(finding: dict) -> bool:
    """A finding the fleet judged itself of a code the node decides too: not one a node's own `gpumem-tui
    export` raised, nor the count of a node's GPUs as planned (the node says each GPU)."""
    counted = finding["code"] == "headroom_low" and finding["gpu_index"] is None
    return finding["code"] in WORDED and not counted and not finding["explanation"].startswith("Raised by gpumem")


@pytest.mark.parametrize("at", [AT, AT - 70])
def test_each_fleet_line_is_the_node_s_own(fleet_url, capsys, at):
    fleet = _json(capsys, "fleet", "check", "--prometheus", fleet_url, "--at", str(at), "--json")["findings"]
    compared = 0
    for node in NODES:
        checked = _json(capsys, "check", "--prometheus", fleet_url, "--node", node, "--at", str(at), "--json")
        said = {(f["code"], f["severity"], f["title"]): f for f in checked["findings"]}
        differs = {(d["code"], d["severity"]) for d in checked["fleet_differs"] if d["only_in"] == "fleet"}
        for f in (f for f in fleet if f["node"] == node and _own(f)):
            key = (f["code"], f["severity"], f["title"])
            if (f["code"], f["severity"]) in differs:  # the node's check says why it does not raise it
                continue
            assert key in said, (node, key, sorted(said))
            if f["code"] in ("engine_down", "plan_note"):  # the same numbers read: the same explanation
                assert (f["explanation"], f["try_this"]) == (said[key]["explanation"], said[key]["try_this"])
            compared += 1
    assert compared >= 4  # node-c's engine down or its GPU's headroom, node-b's and node-d's full KV caches


def test_the_text_line_is_the_node_s_title(fleet_url, capsys):
    checked = _json(capsys, "check", "--prometheus", fleet_url, "--node", "node-c", "--at", str(AT), "--json")
    (down,) = [f for f in checked["findings"] if f["code"] == "engine_down"]
    assert main(["fleet", "check", "--prometheus", fleet_url, "--at", str(AT)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert f"critical engine_down: [node-c] {down['title']}" in lines
    assert lines[0].startswith(f"CRITICAL - [node-c] {down['title']}; also 2 critical, 5 warnings; ")

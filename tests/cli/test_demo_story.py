"""`check --demo` and `snapshot --demo` without `--at` show the moment that tells each scenario's story, and
without a scenario they show the TUI's default one (healthy-8b)."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.cli import main
from gpumem_tui.demo import DEFAULT_SCENARIO, load_scenario, scenario_names


def _calm(findings) -> bool:
    return {f["severity"] for f in findings} <= {"info"}


STORIES = {
    "healthy-8b": _calm,
    "tp4-70b": _calm,
    "idle-node": lambda findings: findings == [],
    # every slice's and every MPS client's memory is named: nothing unattributed, nothing to look at
    "mig-node": lambda findings: findings == [],
    "kv-pressure": lambda findings: {f["code"] for f in findings if f["severity"] == "warning"} == {"kv_saturated"},
    "wrong-precision": lambda findings: findings[0]["code"] == "weights_mismatch",
    # the story is the exit: the engine is gone, and the finding names the notebook that caused it
    "noisy-neighbour": lambda findings: (findings[0]["code"], findings[0]["pid"]) == ("engine_exited", 3100),
    "gpu-lost": lambda findings: {"gpu_lost", "engine_exited"} <= {f["code"] for f in findings},
    # the story is what is not there: two GPUs this job may not open, said at info level, never as lost
    "slurm-denied": lambda findings: _calm(findings) and "gpu_not_accessible" in {f["code"] for f in findings},
    # seen from the host, each pod's engine is reached at its pod address and agrees with its plan
    "k8s-two-pods": _calm,
    # inside the engine's container: the one thing to say is why NVML's pids are not the ones seen here
    "container-view": lambda findings: (
        [(f["code"], f["severity"]) for f in findings] == [("pid_namespaces_differ", "info")]
    ),
    # SGLang's pool fills: the one warning says so in SGLang's flags
    "sglang-node": lambda findings: (
        [(f["code"], f["severity"]) for f in findings] == [("kv_saturated", "warning")]
        and "--max-running-requests" in findings[0]["try_this"]
    ),
    "busy-node": lambda findings: (
        [(f["code"], f["endpoint"]) for f in findings if f["severity"] != "info"]
        == [("kv_saturated", "http://127.0.0.1:8003")]
    ),
}


def test_every_shipped_scenario_has_a_story_test():
    assert set(STORIES) == set(scenario_names())


@pytest.mark.parametrize("name", sorted(STORIES))
def test_check_without_at_reports_the_story(name, capsys):
    main(["check", "--demo", name, "--json"])
    data = json.loads(capsys.readouterr().out)
    story_s = load_scenario(name).story_s
    assert data["where"].startswith(f"simulated node '{name}' at {story_s:g} s")
    assert STORIES[name](data["findings"]), [(f["severity"], f["code"]) for f in data["findings"]]


def test_check_and_snapshot_default_to_the_tuis_scenario_at_its_story(capsys):
    scenario = load_scenario(DEFAULT_SCENARIO)
    assert main(["check", "--demo", "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["source"] == f"demo:{DEFAULT_SCENARIO}"
    assert checked["timestamp"] == scenario.start_epoch + scenario.story_s
    assert main(["snapshot", "--demo", "--json"]) == 0
    snapshot = json.loads(capsys.readouterr().out)
    assert (snapshot["source"], snapshot["timestamp"]) == (checked["source"], checked["timestamp"])
    assert main(["snapshot", "--demo"]) == 0
    assert f"simulated node '{DEFAULT_SCENARIO}' at {scenario.story_s:g} s" in capsys.readouterr().out


def test_check_at_a_moment_before_the_start_walks_from_the_beginning(capsys):
    """Asked about the loading engine, check still sees it load (its history starts at 0 s)."""
    assert main(["check", "--demo", "healthy-8b", "--at", "15", "--json"]) == 0
    codes = {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert "engine_starting" in codes

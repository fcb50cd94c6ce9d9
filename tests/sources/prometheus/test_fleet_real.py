"""`fleet check` and `fleet snapshot` against a real Prometheus over a fleet backfilled from the demo
scenarios (conftest.FLEET): each scenario's findings on the right node, whatever the label setup."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.cli import main
from tests.sources.prometheus.conftest import AT

pytestmark = pytest.mark.prometheus


def _run(capsys, *argv: str) -> tuple[int, dict]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, json.loads(captured.out)


@pytest.fixture(scope="module")
def checked(fleet_url):
    code = main(["fleet", "check", "--prometheus", fleet_url, "--at", str(AT), "--json"])
    return code


def _check(capsys, url: str, *extra: str) -> tuple[int, dict]:
    return _run(capsys, "fleet", "check", "--prometheus", url, "--at", str(AT), "--json", *extra)


def _codes(report: dict, node: str | None) -> set[tuple[str, str]]:
    return {(f["severity"], f["code"]) for f in report["findings"] if f["node"] == node}


def test_each_scenario_finding_is_on_its_node(fleet_url, capsys):
    code, report = _check(capsys, fleet_url)
    assert code == 2 and report["status"] == "CRITICAL"
    # healthy-8b: only the headroom vLLM leaves on purpose
    assert _codes(report, "node-a") == {("info", "headroom_low")}
    # busy-node (plain pod labels, hostname): the 70B engine on GPUs 6 and 7 is saturated
    b = [f for f in report["findings"] if f["node"] == "node-b" and f["code"] == "kv_saturated"]
    assert [f["endpoint"] for f in b] == ["serving/vllm-node-b-8003"]
    assert b[0]["title"].startswith("KV cache full on GPU 6,7: ")
    assert b[0]["title"].endswith("(Llama-3.1-70B serving/vllm-node-b-8003)")
    # noisy-neighbour, bare metal: the engine exited, its target is down
    assert ("critical", "engine_down") in _codes(report, "node-c")
    # kv-pressure behind exported_pod
    assert ("warning", "kv_saturated") in _codes(report, "node-d")
    assert _codes(report, "node-f") == set()
    # the node whose exporter stopped 90 s before
    assert _codes(report, "node-e") == {("warning", "source_stale")}
    drift = [f for f in report["findings"] if f["code"] == "config_drift"]
    assert len(drift) == 1 and "enable_prefix_caching" in drift[0]["title"]
    assert "Llama-3.1-8B-Instruct" in drift[0]["title"]


def test_a_node_that_runs_the_exporter_adds_what_its_plan_says(fleet_url, capsys):
    """wrong-precision: only the node's plan knows the weights and the pool are wrong; the KV saturation both
    see is said once, the node's."""
    _, report = _check(capsys, fleet_url)
    h = [f for f in report["findings"] if f["node"] == "node-h"]
    assert sorted((f["severity"], f["code"]) for f in h) == [
        ("critical", "kv_pool_short"),
        ("critical", "weights_mismatch"),
        ("warning", "kv_saturated"),
    ]
    assert all("gpumem-tui export" in f["explanation"] for f in h)
    assert {f["gpu_index"] for f in h if f["code"] != "kv_saturated"} == {0}


def test_the_join_says_how_each_engine_was_found(fleet_url, capsys):
    code, snap = _run(capsys, "fleet", "snapshot", "--prometheus", fleet_url, "--at", str(AT), "--json")
    assert code == 0
    engines = {(e["node"], e["pod"] or e["instance"]): e for e in snap["engines"]}
    assert engines[("node-a", "vllm-node-a-8000")]["joined"] == "found"
    assert engines[("node-c", "node-c:8000")]["joined"] == "assumed"
    assert len([e for e in snap["engines"] if e["node"] == "node-b"]) == 4
    assert snap["coverage"] == {"nodes": 9, "gpus": 25, "engines": 12, "joined": 12, "not_joined": 0}


def test_virtual_gpu_copies_are_counted_once(fleet_url, capsys):
    """node-g runs node-a's scenario with each GPU series repeated per pod: the same bytes, joined alike."""
    _, snap = _run(capsys, "fleet", "snapshot", "--prometheus", fleet_url, "--at", str(AT), "--json")
    nodes = {n["name"]: n for n in snap["nodes"]}
    for field in ("used_bytes", "free_bytes", "reserved_bytes", "total_bytes", "gpus"):
        assert nodes["node-g"][field] == nodes["node-a"][field], field
    (engine,) = [e for e in snap["engines"] if e["node"] == "node-g"]
    assert engine["joined"] == "found" and len(engine["gpus"]) == 1
    _, report = _check(capsys, fleet_url)
    assert _codes(report, "node-g") == _codes(report, "node-a")


def test_an_exporter_pod_label_is_no_workload(fleet_url, capsys):
    """honorLabels: node-f's idle GPUs carry the exporter's own pod, which holds no GPU."""
    _, snap = _run(capsys, "fleet", "snapshot", "--prometheus", fleet_url, "--at", str(AT), "--json")
    free = [g for g in snap["gpus"] if g["node"] == "node-f"]
    assert len(free) == 8 and all(g["pods"] == [] for g in free)
    assert all("dcgm-exporter" not in pod for g in snap["gpus"] for pod in g["pods"])


def test_a_node_without_reserved_says_n_a_and_totals_used_plus_free(fleet_url, capsys):
    _, snap = _run(capsys, "fleet", "snapshot", "--prometheus", fleet_url, "--at", str(AT), "--json")
    (gpu,) = [g for g in snap["gpus"] if g["node"] == "node-c"]
    assert gpu["reserved_bytes"] is None and gpu["unknown"]["reserved_bytes"].startswith("n/a")
    assert gpu["total_bytes"] == gpu["used_bytes"] + gpu["free_bytes"]
    (other,) = [g for g in snap["gpus"] if g["node"] == "node-a"]
    assert other["total_bytes"] == other["used_bytes"] + other["free_bytes"] + other["reserved_bytes"]
    assert other["used_bytes"] % 2**20 == 0  # dcgm-exporter's MiB, times 2^20


def test_a_nan_reading_is_unknown_never_fine(fleet_url, capsys):
    _, snap = _run(capsys, "fleet", "snapshot", "--prometheus", fleet_url, "--at", str(AT), "--json")
    (gpu,) = [g for g in snap["gpus"] if g["node"] == "node-nan"]
    assert (
        gpu["used_bytes"] is None
        and gpu["unknown"]["used_bytes"] == "dcgm-exporter reported FB_USED as NaN: no reading"
    )
    assert gpu["total_bytes"] is None
    (node,) = [n for n in snap["nodes"] if n["name"] == "node-nan"]
    assert node["used_bytes"] is None and node["unknown"]["used_bytes"]
    (engine,) = [e for e in snap["engines"] if e["node"] == "node-nan"]
    assert engine["kv_usage_fraction"] is None
    assert engine["unknown"]["kv_usage_fraction"] == "the engine reported NaN: no reading"
    assert engine["requests_waiting"] == 3 and engine["pool_tokens"] is None
    assert engine["unknown"]["pool_tokens"] == "no vllm:cache_config_info series"
    _, report = _check(capsys, fleet_url)
    assert _codes(report, "node-nan") == set()


def test_the_selector_narrows_every_query(fleet_url, capsys):
    code, snap = _run(
        capsys,
        "fleet",
        "snapshot",
        "--prometheus",
        fleet_url,
        "--at",
        str(AT),
        "--json",
        "--selector",
        '{Hostname="node-a"}',
    )
    assert code == 0
    assert [n["name"] for n in snap["nodes"]] == ["node-a"]
    assert snap["engines"] == [] and snap["unknown"]["engines"] == "no vLLM or SGLang series match the selector"


def test_a_time_with_no_data_is_no_fleet(fleet_url, capsys):
    code, report = _check(capsys, fleet_url, "--at", "2025-06-01T00:00:00Z")
    assert report["coverage"]["nodes"] == 0
    assert report["unknown"]["memory"] == "no dcgm-exporter series match the selector"


def test_headroom_a_neighbour_takes_is_critical_on_its_node(fleet_url, capsys):
    """noisy-neighbour at 50 s: a notebook beside the engine leaves 0.7 % of the card free, as the node's own
    `check --demo noisy-neighbour --at 50` says; vLLM's utilization 0.75 leaves a quarter of 79.19 GiB."""
    code, report = _run(capsys, "fleet", "check", "--prometheus", fleet_url, "--at", str(AT - 70), "--json")
    (low,) = [f for f in report["findings"] if f["node"] == "node-c" and f["code"] == "headroom_low"]
    assert low["severity"] == "critical" and low["gpu_index"] == 0
    assert low["title"] == "memory nearly full on GPU 0: 0.58 GiB free (0.7 %)"  # the node's words (its check's)
    assert "of 79.19 GiB (0.7 % of the card); the auto plan leaves 19.80 GiB" in low["explanation"]
    assert code == 2


@pytest.mark.parametrize("json_output", [False, True])
def test_the_exit_status_survives_a_reader_that_left(fleet_url, json_output):
    """`fleet check ... | head -1`: CRITICAL stays 2 when the reader closes the pipe before anything is read."""
    from tests.cli.test_broken_pipe import run_into_closed_pipe

    argv = ["fleet", "check", "--prometheus", fleet_url, "--at", str(AT)] + (["--json"] if json_output else [])
    done = run_into_closed_pipe(*argv)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_the_text_lists_what_needs_a_look_and_counts_what_is_as_planned(fleet_url, capsys):
    _, report = _check(capsys, fleet_url)
    planned = [f for f in report["findings"] if f["severity"] == "info" and f["code"] == "headroom_low"]
    assert len(planned) == len({f["node"] for f in planned}) == 4  # one per node, counting its GPUs
    assert main(["fleet", "check", "--prometheus", fleet_url, "--at", str(AT)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("CRITICAL - [node-c] engine does not answer on GPU 0: ")
    assert "; also 2 critical, 5 warnings; " in lines[0]
    above_info = [f for f in report["findings"] if f["severity"] != "info"]
    assert len([line for line in lines if line.startswith(("critical", "warning"))]) == len(above_info)
    counted = [line for line in lines if line.startswith("info     headroom_low:")]
    assert len(counted) == 4
    assert counted[1] == "info     headroom_low: [node-b] 6 GPUs under 10.0 % free, as planned (the least: 8.7 %)"


@pytest.mark.parametrize("action", ["check", "snapshot"])
def test_source_options_before_the_action_are_not_dropped(fleet_url, capsys, action):
    """`fleet --help` lists the source options before ACTION: given there they count as after it (argparse
    let the action's own defaults overwrite them, and `fleet --selector X check` checked the whole fleet)."""
    options = ["--prometheus", fleet_url, "--at", str(AT), "--selector", '{Hostname="node-a"}']
    after = _run(capsys, "fleet", action, *options, "--json")
    before = _run(capsys, "fleet", *options, action, "--json")
    assert before == after
    assert after[1]["coverage"]["nodes"] == 1


def test_a_source_twice_or_none_is_one_line(fleet_url, capsys):
    assert main(["fleet", "--demo", "check", "--prometheus", fleet_url]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--prometheus" in err and "--demo" in err
    assert main(["fleet", "snapshot"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--prometheus URL or --demo" in err


@pytest.mark.parametrize("option", [["--history", "30m"], ["--interval", "5"]])
def test_a_screen_option_before_an_action_is_refused_not_ignored(capsys, option):
    """`--history` and `--interval` before the action are the fleet screen's: an action would not use them."""
    assert main(["fleet", *option, "check", "--demo"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and option[0] in err and "screen" in err
    assert main(["fleet", *option, "rules"]) == 2
    assert option[0] in capsys.readouterr().err

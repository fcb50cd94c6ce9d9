"""The two issue-14 scenarios through the commands a user runs: the pods and their addresses on the host,
the engine placed by UUID inside a container."""

from __future__ import annotations

import json

from gpumem_tui.cli import main
from tests.cli.snapshot_text import snapshot_lines


def test_snapshot_on_a_kubernetes_node_names_each_pod_and_reaches_it_at_its_address(capsys):
    assert main(["snapshot", "--demo", "k8s-two-pods"]) == 0
    out = capsys.readouterr().out
    assert " Pod " in out and "team-a/vllm-chat-7d9f8c6b5-x2k4q" in out and "team-b/vllm-code-5c4b7d9f6-m8n2p" in out
    assert "engine http://127.0.0.2:8000: ok" in out and "engine http://127.0.0.3:8000: ok" in out
    assert (
        "discovery: pid 2100 runs in another network namespace (pod team-a/vllm-chat-7d9f8c6b5-x2k4q); probed at "
        "its pod address 127.0.0.2:8000 from its socket table"
    ) in " ".join(out.split())
    assert main(["snapshot", "--demo", "k8s-two-pods", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(p["pid"], p["pod"]) for p in data["processes"]] == [
        (2100, "team-a/vllm-chat-7d9f8c6b5-x2k4q"),
        (2200, "team-b/vllm-code-5c4b7d9f6-m8n2p"),
    ]


def test_a_node_without_pods_shows_no_pod_column(capsys):
    assert main(["snapshot", "--demo", "healthy-8b"]) == 0
    assert " Pod " not in capsys.readouterr().out


def test_check_plans_each_pods_engine_on_its_own_gpu(capsys):
    assert main(["check", "--demo", "k8s-two-pods", "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)["plans"]
    assert [(p["endpoint"], p["gpu_indices"]) for p in plans] == [
        ("http://127.0.0.2:8000", [0]),
        ("http://127.0.0.3:8000", [1]),
    ]


def test_check_inside_a_container_draws_the_plan_on_the_engines_gpu_and_says_why(capsys):
    assert main(["check", "--demo", "container-view", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(p["endpoint"], p["gpu_indices"]) for p in report["plans"]] == [("http://127.0.0.1:8000", [1])]
    codes = [f["code"] for f in report["findings"]]
    assert codes == ["pid_namespaces_differ"]  # no foreign process, no memory blamed on a container
    assert main(["snapshot", "--demo", "container-view"]) == 0
    assert "host: PID namespaces differ" in capsys.readouterr().out


def test_snapshot_at_80_columns_keeps_every_number_whole_beside_the_pod_column():
    """The pod (up to 40 characters) gives way as the name and user do: before, at 80 columns the PID, the
    GPU memory and the header were cut to 'P…', '2…', '72,635 …'."""
    lines = snapshot_lines("k8s-two-pods", 60, 80)
    header = next(line for line in lines if "Pod" in line)
    assert header.split()[:4] == ["PID", "GPU", "Type", "GPU"], header
    rows = [line for line in lines if line.startswith(("2100 ", "2200 "))]
    assert len(rows) == 2, lines
    assert "72,635 MiB" in rows[0] and "4.5 GiB" in rows[0] and "100 %" in rows[0], rows[0]
    assert "team-a" in rows[0] and "team-b" in rows[1], rows  # each pod still told apart by its namespace
    assert all(len(line) <= 80 for line in rows), rows
    wide = [line for line in snapshot_lines("k8s-two-pods", 60, 160) if line.startswith("2100 ")]
    assert "team-a/vllm-chat-7d9f8c6b5-x2k4q" in wide[0], wide  # whole where there is room

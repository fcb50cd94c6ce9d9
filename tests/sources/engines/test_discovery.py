"""Engine endpoints found from process command lines, with host, port and pids."""

from __future__ import annotations

import pytest

from gpumem_tui.sources.engines.discovery import MAX_ENDPOINTS, MAX_NOTES, discover, survey

THIS_NODE = {"10.1.2.3", "10.0.0.9", "gpu-node-7"}
"""The addresses and name the tests give this node."""


@pytest.mark.parametrize(
    ("cmdline", "engine", "url"),
    [
        (
            "/usr/bin/python3 /usr/local/bin/vllm serve meta-llama/Llama-3.1-8B --port 8001",
            "vllm",
            "http://127.0.0.1:8001",
        ),
        ("vllm serve Qwen/Qwen2.5-7B --host 0.0.0.0", "vllm", "http://127.0.0.1:8000"),
        (
            "python -m vllm.entrypoints.openai.api_server --model x --host 10.1.2.3 --port=9000",
            "vllm",
            "http://10.1.2.3:9000",
        ),
        ("python3 -m sglang.launch_server --model-path x", "sglang", "http://127.0.0.1:30000"),
        (
            "python3 -m sglang.launch_server --model-path x --port 31000 --host ::",
            "sglang",
            "http://127.0.0.1:31000",
        ),
        (
            "/opt/llama.cpp/build/bin/llama-server -m m.gguf --metrics --port 8081",
            "llamacpp",
            "http://127.0.0.1:8081",
        ),
        ("text-generation-launcher --model-id x --port 8080", "tgi", "http://127.0.0.1:8080"),
        ("text-generation-launcher --model-id x --hostname 0.0.0.0", "tgi", "http://127.0.0.1:3000"),
        ("text-generation-launcher --model-id x --hostname 10.0.0.9", "tgi", "http://10.0.0.9:3000"),
        ("vllm serve x --host ::1 --port 8000", "vllm", "http://[::1]:8000"),
    ],
)
def test_engine_and_address_from_arguments_or_defaults(cmdline: str, engine: str, url: str) -> None:
    [found] = discover([(100, cmdline)], THIS_NODE)
    assert (found.engine, found.url, found.pids) == (engine, url, (100,))


@pytest.mark.parametrize("cmdline", ["bash", "python train.py --port 8000", "vllm bench serve", "", "vllm"])
def test_other_processes_are_not_engines(cmdline: str) -> None:
    assert discover([(1, cmdline)]) == []


def test_children_are_tied_to_their_server_through_parent_pids() -> None:
    processes = [
        (10, ["python3", "/usr/bin/vllm", "serve", "m", "--port", "8001"], 1),
        (11, "VLLM::EngineCore", 10),
        (12, "VLLM::Worker_TP0", 11),
        (13, "VLLM::Worker_TP1", 11),
        (20, "python -m sglang.launch_server --model-path m", 1),
        (21, "sglang::scheduler_TP0", 20),
        (30, "unrelated", 1),
    ]
    found = {e.engine: e.pids for e in discover(processes)}
    assert found == {"vllm": (10, 11, 12, 13), "sglang": (20, 21)}


def test_llama_server_without_metrics_flag_says_so() -> None:
    [found] = discover([(5, "llama-server -m m.gguf")])
    assert found.notes and "--metrics" in found.notes[0]


def test_unbalanced_quotes_do_not_break_discovery() -> None:
    assert discover([(1, "vllm serve 'unterminated --port 8002")])[0].url == "http://127.0.0.1:8002"


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["vllm", "serve", "m", "--port", "99999"], "--port '99999', not a port (1 to 65535)"),
        (["vllm", "serve", "m", "--port", "0"], "--port '0', not a port"),
        (["vllm", "serve", "m", "--port", "eighty"], "--port 'eighty', not a port"),
        (["vllm", "serve", "m", "--port", "٨٠٠٠"], "not a port"),  # digits, but not ASCII ones
        (["vllm", "serve", "m", "--port"], "--port but no value"),
        (["vllm", "serve", "m", "--host", "a b"], "--host 'a b', not an address"),
        (["vllm", "serve", "m", "--host", "http://x/"], "not an address"),
        (["vllm", "serve", "m", "--host", "[::1"], "not an address"),
    ],
)
def test_a_command_line_that_cannot_be_understood_is_skipped_with_a_note_and_the_others_found(argv, why) -> None:
    found = survey([(1, argv), (2, "vllm serve ok --port 8001")])
    assert [e.url for e in found.endpoints] == ["http://127.0.0.1:8001"]
    [note] = found.notes
    assert note.startswith("pid 1: vllm with ") and why in note and note.endswith("not probed")


@pytest.mark.parametrize("host", ["10.9.9.9", "metadata.internal", "2001:db8::1", "169.254.169.254"])
def test_another_hosts_address_is_not_probed_and_the_note_says_to_pass_endpoint(host: str) -> None:
    found = survey([(7, ["vllm", "serve", "m", "--host", host, "--port", "8000"])], THIS_NODE)
    assert found.endpoints == []
    [note] = found.notes
    assert f"serves on '{host}', not an address of this node" in note and "--endpoint" in note


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.5", "http://127.0.0.5:8000"),
        ("localhost", "http://localhost:8000"),
        ("::1", "http://[::1]:8000"),
        ("10.1.2.3", "http://10.1.2.3:8000"),
        ("gpu-node-7", "http://gpu-node-7:8000"),
        ("0.0.0.0", "http://127.0.0.1:8000"),
    ],
)
def test_loopback_and_this_nodes_own_addresses_are_probed(host: str, url: str) -> None:
    found = survey([(7, ["vllm", "serve", "m", "--host", host])], THIS_NODE)
    assert [e.url for e in found.endpoints] == [url] and found.notes == []


def test_many_odd_processes_give_a_few_notes_and_a_count() -> None:
    processes = [(pid, f"vllm serve m --port {70000 + pid}") for pid in range(50)]
    notes = survey(processes).notes
    assert len(notes) == MAX_NOTES + 1 and notes[-1] == f"{50 - MAX_NOTES} more engine processes skipped"


def test_engine_servers_probed_are_capped() -> None:
    processes = [(pid, f"vllm serve m --port {9000 + pid}") for pid in range(MAX_ENDPOINTS + 5)]
    found = survey(processes)
    assert len(found.endpoints) == MAX_ENDPOINTS
    assert found.notes[0] == f"pid {MAX_ENDPOINTS}: more than {MAX_ENDPOINTS} engine servers; not probed"


def test_parent_cycles_terminate() -> None:
    assert discover([(1, "a", 2), (2, "b", 1)]) == []

"""Engine endpoints found from process command lines, with host, port and pids."""

from __future__ import annotations

import pytest

from gpumem_tui.sources.engines.discovery import discover, engine_address


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
    [found] = discover([(100, cmdline)])
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


def test_unbalanced_quotes_and_a_bad_port_do_not_break_discovery() -> None:
    assert discover([(1, "vllm serve 'unterminated --port 8002")])[0].url == "http://127.0.0.1:8002"
    assert engine_address(["vllm", "serve", "m", "--port", "eighty"]) is None


def test_parent_cycles_terminate() -> None:
    assert discover([(1, "a", 2), (2, "b", 1)]) == []

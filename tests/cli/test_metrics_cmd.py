"""`gpumem-tui metrics FILE|URL`: a saved payload or a live simulated engine, human and JSON, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gpumem_tui.cli import main
from gpumem_tui.demo import ManualClock, SimulatedNode, load_scenario
from gpumem_tui.demo.engine_server import MockEngineServer
from tests.datafiles import METRICS

KEYS = {
    "engine",
    "model",
    "kv_usage_fraction",
    "kv_pool_tokens",
    "block_size",
    "cache_dtype",
    "gpu_memory_utilization",
    "requests_running",
    "requests_waiting",
    "preemptions_total",
}


@pytest.fixture
def served_node():
    """The healthy-8b demo node at 300 s, its engine's state served over loopback."""
    clock = ManualClock()
    node = SimulatedNode(load_scenario("healthy-8b"), clock=clock)
    clock.set(300)
    with MockEngineServer(node.engine_states) as server:
        yield server, node.engine_states()[0]


def test_metrics_file_json(capsys) -> None:
    assert main(["metrics", str(METRICS / "sglang_docs_production_metrics_llama31_8b.prom"), "--json"]) == 0
    [record] = json.loads(capsys.readouterr().out)
    assert set(record) >= KEYS
    assert (record["engine"], record["kv_usage_fraction"], record["kv_pool_tokens"]) == ("sglang", 0.28, None)


@pytest.mark.usefixtures("models_waited")
def test_metrics_live_url_human_and_json(served_node, capsys) -> None:
    server, state = served_node
    assert main(["metrics", server.url]) == 0
    human = capsys.readouterr().out
    assert main(["metrics", server.url + "/metrics", "--json"]) == 0
    [record] = json.loads(capsys.readouterr().out)
    assert f"vllm v1: {state.model}" in human and f"{state.kv_pool_tokens:,} tok" in human
    assert f"{state.kv_usage_fraction * 100:.1f} %" in human
    assert (record["model"], record["max_model_len"], record["kv_pool_tokens"]) == (
        state.model,
        state.max_model_len,
        state.kv_pool_tokens,
    )
    assert (record["kv_usage_fraction"], record["requests_running"]) == (
        state.kv_usage_fraction,
        state.requests_running,
    )


def test_metrics_bad_inputs_are_one_line_and_an_exit_code(served_node, tmp_path, capsys) -> None:
    server, _ = served_node
    garbage = tmp_path / "garbage.prom"
    garbage.write_bytes(b"\x00\xff<<not metrics>>\n")
    assert main(["metrics", str(garbage)]) == 2
    assert main(["metrics", str(tmp_path / "missing.prom")]) == 2
    assert main(["metrics", "ftp://x"]) == 2
    server.set_fault("http_500")
    assert main(["metrics", server.url]) == 3
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 4 and all(line.startswith("gpumem-tui: ") for line in errors)
    assert "HTTP 500" in errors[-1]


def test_names_with_escapes_print_literally(tmp_path, capsys) -> None:
    path = tmp_path / "evil.prom"
    path.write_text('vllm:kv_cache_usage_perc{engine="0",model_name="evil\x1b[2J\\nname"} 0.5\n')
    assert main(["metrics", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b[2J" not in out and "evil\\x1b[2J\\nname" in out


def test_console_script_runs_without_traceback(tmp_path) -> None:
    path = tmp_path / "x.prom"
    path.write_text("<html>oops</html>\n")
    done = subprocess.run([sys.executable, "-m", "gpumem_tui", "metrics", str(path)], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "HTML page" in done.stderr


def test_a_metrics_file_is_read_no_further_than_a_payload_is(tmp_path, capsys):
    """`metrics FILE` read the whole file, while a URL's body is refused past 8 MiB."""
    from gpumem_tui.sources.engines.parse import MAX_BYTES

    source = tmp_path / "big.prom"
    source.write_text('vllm:num_requests_running{model_name="m"} 1\n' * (MAX_BYTES // 40))
    assert main(["metrics", str(source)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"gpumem-tui: {source}: over 8 MiB, larger than any engine's /metrics payload\n"


def test_a_device_is_refused_and_a_fifo_never_waited_on(tmp_path, capsys):
    """/dev/zero was read for 8 MiB, a FIFO without a writer waited for ever; the rule `log FILE` follows too."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main(["metrics", "/dev/zero"]) == 2
    assert (
        capsys.readouterr().err
        == "gpumem-tui: cannot read /dev/zero: not a regular file or a pipe (a device or a socket)\n"
    )
    assert main(["metrics", str(fifo)]) == 2
    assert capsys.readouterr().err == f"gpumem-tui: {fifo}: empty payload\n"

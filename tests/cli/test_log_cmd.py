"""`gpumem-tui log FILE`: the documented JSON keys, per-rank values, failures, and bad input."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gpumem_tui.cli import main
from tests.datafiles import CALIBRATION

LOG_DOC = Path(__file__).resolve().parents[2] / "docs" / "log-json.md"

KEYS = {
    "vllm_version",
    "model",
    "tensor_parallel_size",
    "dtype",
    "quantization",
    "kv_cache_dtype",
    "gpu_memory_utilization",
    "max_model_len",
    "total_gpu_memory_gib",
    "weights_gib",
    "non_torch_gib",
    "activation_peak_gib",
    "cudagraph_estimated_gib",
    "cudagraph_gib",
    "kv_cache_gib",
    "num_gpu_blocks",
    "kv_cache_tokens",
    "max_concurrency",
    "failures",
}


def _cases() -> list[dict]:
    return json.loads(CALIBRATION.read_text(encoding="utf-8"))


def test_log_json_has_the_issue_keys_and_ranks(tmp_path, capsys) -> None:
    case = next(c for c in _cases() if c["tensor_parallel_size"] == 2 and c["status"] == "ok" and c["engine"] == "V1")
    path = tmp_path / "tp2.log"
    path.write_text("\n".join(case["log_lines"]))
    assert main(["log", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    additions = {"engine", "ranks", "startup_complete", "limit_mm_per_prompt", "server_args"}
    sglang = {"free_before_weights_gib", "free_after_weights_gib", "free_after_pool_gib", "max_running_requests"}
    assert set(data) - KEYS == additions | sglang and set(data) >= KEYS
    assert all(data[key] is None for key in sglang | {"server_args"})  # a vLLM log states none of SGLang's
    assert data["kv_cache_gib"] == case["kv_cache_gib"] and [r["rank"] for r in data["ranks"]] == ["TP0", "TP1"]
    documented = re.findall(r"^\| `(\w+)` \|", LOG_DOC.read_text(encoding="utf-8"), re.MULTILINE)
    assert [key for key in data if key in KEYS] == list(dict.fromkeys(key for key in documented if key in KEYS))
    assert list(data["ranks"][0]) == ["rank", *(key for key in data if key in data["ranks"][0])]  # as the log's


def test_log_human_shows_units_and_failures(tmp_path, capsys) -> None:
    path = tmp_path / "failed.log"
    path.write_text("\n".join(_cases()[3]["log_lines"]))
    assert main(["log", str(path)]) == 1
    out = capsys.readouterr().out
    assert "14.99 GiB" in out and "FAILED (kv_cache_too_small)" in out and "23,648" in out


def test_a_failed_start_is_said_first_and_exits_1(capsys) -> None:
    """Issue 26, point 8: the failure is the first line, the exit status is 1 in every output, as the help says;
    a log whose start went well exits 0."""
    path = str(DATA / "vllm_0.7_v0_qwen2.5-7b_negative_kv.log")
    assert main(["log", path]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first == "FAILED (kv_cache_too_small): the memory left for the KV cache is -1.05 GiB"
    assert main(["log", path, "--json"]) == 1 and json.loads(capsys.readouterr().out)["failures"]
    assert main(["log", str(DATA / "vllm_0.19_gemma-2-27b_started.log")]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["log", "--help"])
    assert "1 it shows the start failed" in " ".join(capsys.readouterr().out.split())


def test_sizes_print_with_two_decimals(capsys) -> None:
    assert main(["log", str(DATA / "vllm_0.6.4_v0_llama-3.1-8b_no_model.log")]) == 0
    out = capsys.readouterr().out
    assert "weights                  14.99 GiB" in out and "GPU total                23.58 GiB" in out
    assert "14.9888" not in out and "non-torch                 0.35 GiB" in out


def test_documented_keys_match_the_schema_doc() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "log-json.md").read_text(encoding="utf-8")
    assert all(f"| `{key}` |" in doc for key in (*KEYS, "engine", "ranks", "startup_complete"))


def test_log_without_engine_lines_is_bad_input(tmp_path, capsys) -> None:
    path = tmp_path / "empty.log"
    path.write_text("nothing here\n")
    assert main(["log", str(path)]) == 2
    assert capsys.readouterr().err.strip() == f"gpumem-tui: {path}: no vLLM or SGLang startup lines found"
    assert main(["log", str(tmp_path / "missing.log")]) == 2


DATA = Path(__file__).resolve().parents[1] / "data"


def test_a_log_says_whether_the_start_completed(capsys) -> None:
    """`init engine (...) took N seconds` ends a start; an excerpt without it does not show one."""
    assert main(["log", str(DATA / "vllm_0.19_gemma-2-27b_started.log"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["startup_complete"] is True
    assert main(["log", str(DATA / "vllm_0.6.4_v0_llama-3.1-8b_no_model.log"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["startup_complete"] is False


def test_an_out_of_memory_message_keeps_its_clues(capsys) -> None:
    """The human output names who held the GPU and PyTorch's split; the JSON keeps them as bytes."""
    path = DATA / "torch_oom" / "torch_2.x_other_process.log"
    assert main(["log", str(path)]) == 1
    out = capsys.readouterr().out
    assert (
        "FAILED (cuda_out_of_memory): CUDA out of memory on GPU 0 allocating 74.16 GiB: 29.89 GiB free of "
        "44.40 GiB" in out
    )
    assert "process 2684311 holds 14.51 GiB" in out
    assert "PyTorch: 13.44 GiB allocated, 738.96 MiB reserved but unallocated" in out  # as the log says it
    assert main(["log", str(path), "--json"]) == 1
    oom = json.loads(capsys.readouterr().out)["failures"][0]["oom"]
    assert oom["processes"] == [{"pid": 2684311, "bytes": 15579993866}]
    assert oom["tried_to_allocate_bytes"] == 79628693668 and oom["reserved_unallocated_bytes"] == 774855721


def test_small_out_of_memory_sizes_keep_their_unit(capsys) -> None:
    """'Tried to allocate 2.00 MiB ... 448.00 KiB is free' printed as 'allocating 0.00 GiB: 0.00 GiB free'."""
    assert main(["log", str(DATA / "torch_oom" / "template_wrapped_private_pools.log")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "FAILED (cuda_out_of_memory): CUDA out of memory on GPU 6 allocating 2.00 MiB: 448.00 KiB free of 44.53 GiB"
    )
    assert lines[2:4] == [
        "    process 1861983 holds 480.00 MiB",
        "    PyTorch: 42.85 GiB allocated (1.12 GiB of it in private pools such as CUDA graphs), 145.27 MiB reserved "
        "but unallocated",
    ]


def test_documented_oom_keys_match_the_record() -> None:
    from gpumem_tui.sources.engines.startup_log import OomClues

    doc = (Path(__file__).resolve().parents[2] / "docs" / "log-json.md").read_text(encoding="utf-8")
    assert "| `oom` |" in doc and all(f"| `{key}` |" in doc for key in OomClues.model_fields)


def test_a_log_is_read_bounded_and_only_from_a_file_or_a_pipe(tmp_path, capsys) -> None:
    """`log /dev/zero` read without end (OOM-killed, or MemoryError and exit 70); a directory or device is
    refused before a byte is read, a file over the limit is refused in one line, a FIFO never waited on."""

    assert main(["log", "/dev/zero"]) == 2
    assert (
        capsys.readouterr().err
        == "gpumem-tui: cannot read /dev/zero: not a regular file or a pipe (a device or a socket)\n"
    )
    assert main(["log", str(tmp_path)]) == 2
    assert (
        capsys.readouterr().err == f"gpumem-tui: cannot read {tmp_path}: not a regular file or a pipe (a directory)\n"
    )
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main(["log", str(fifo)]) == 2  # no writer: read as empty at once
    assert capsys.readouterr().err == f"gpumem-tui: {fifo}: no vLLM or SGLang startup lines found\n"


def test_a_log_is_read_from_a_pipe() -> None:
    """`kubectl logs POD | gpumem-tui log /dev/stdin`: a pipe is read like the file it carries."""
    done = subprocess.run(
        [sys.executable, "-m", "gpumem_tui", "log", "/dev/stdin", "--json"],
        input=(DATA / "vllm_0.19_gemma-2-27b_started.log").read_bytes(),
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kv_cache_tokens"] == 58672


END = 2**20
"""Each end of a log read, in these tests (LOG_END_BYTES, 32 MiB, made small so a long log is quick to parse)."""


def _long_running_log() -> bytes:
    """A server's log over twice END: its start-up, a middle of request lines, and the out-of-memory that ended
    it."""
    start = (DATA / "vllm_0.19_gemma-2-27b_started.log").read_bytes()
    middle = b"INFO 01-01 00:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s\n" * 40_000
    end = (DATA / "torch_oom" / "template_wrapped_private_pools.log").read_bytes()
    return start + middle + end


@pytest.mark.parametrize("through", ["file", "pipe"])
def test_a_long_running_servers_log_is_read_at_both_ends(tmp_path, monkeypatch, capsys, through) -> None:
    """`log` of a server that ran for days (`kubectl logs POD | gpumem-tui log /dev/stdin`, or saved): its
    start-up at the start and the failure at the end are both read, the middle passed over and said so (the
    whole was once refused past 64 MiB, losing the failure)."""
    from gpumem_tui.cli import log_cmd
    from gpumem_tui.units import fmt_auto

    monkeypatch.setattr(log_cmd, "LOG_END_BYTES", END)
    text = _long_running_log()
    passed = len(text) - 2 * END
    assert passed > END
    if through == "file":
        path = tmp_path / "server.log"
        path.write_bytes(text)
        assert main(["log", str(path), "--json"]) == 1  # the start failed: the failure at the end was read
    else:
        read, write = os.pipe()
        writer = threading.Thread(target=lambda: (os.write(write, text), os.close(write)))
        writer.start()
        try:
            assert main(["log", f"/dev/fd/{read}", "--json"]) == 1
        finally:
            writer.join()
            os.close(read)
    out, err = capsys.readouterr()
    parsed = json.loads(out)
    assert parsed["kv_cache_tokens"] == 58672  # the start-up, at the start
    assert [f["kind"] for f in parsed["failures"]] == ["cuda_out_of_memory"]
    assert err.startswith("gpumem-tui: warning: ") and err.count("\n") == 1
    assert f"{fmt_auto(passed, digits=0)} in the middle not read: its first and last 1 MiB were" in err

"""The plan options are validated once (cli/planargs.py) and alike in plan, check, fit and the TUI: a bad
KV dtype, an unknown vLLM release or no users is one line on stderr and exit 2 (check: 3, UNKNOWN)."""

from __future__ import annotations

import pytest

from gpumem_tui.cli import main

PLAN = ["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm"]
CHECK = ["check", "--demo", "idle-node", "--at", "60", "--model", "llama-3.1-8b"]
FIT = ["fit", "--models", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm"]
TUI = ["--demo", "idle-node", "--model", "llama-3.1-8b"]
BAD = [
    (["--kv-dtype", "foo"], "unknown KV dtype 'foo'"),
    (["--kv-dtype", "fp4"], "unknown KV dtype 'fp4'"),
    (["--vllm-version", "9.9.9"], "vLLM 9.9.9 is not a release"),
    (["--vllm-version", "0.2.0"], "vLLM 0.2.0 is not a release"),
    (["--users", "0"], "'0' must be from 1"),
]


@pytest.mark.parametrize(
    "command, code", [(PLAN, 2), (CHECK, 3), (FIT, 2), (TUI, 2)], ids=["plan", "check", "fit", "tui"]
)
@pytest.mark.parametrize("bad, said", BAD, ids=[" ".join(b) for b, _ in BAD])
def test_a_bad_plan_option_is_one_line_and_the_same_everywhere(capsys, command, code, bad, said):
    assert main([*command, *bad]) == code
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("version", ["0.6.4.post1", "v0.19.0", "0.33.0"])
def test_a_release_the_rules_know_is_planned_with_and_named(capsys, version):
    assert main([*PLAN, "--vllm-version", version]) == 0
    assert f"vLLM {version.removeprefix('v')}" in capsys.readouterr().out

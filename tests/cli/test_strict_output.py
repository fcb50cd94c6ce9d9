"""Output is strict: JSON never holds NaN or Infinity (and a value that cannot be written leaves stdout
empty rather than cut), text never says "nan" or "inf", and a KV cache share over 100 % is not printed
as plain fact."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest

from gpumem_tui.cli import main
from gpumem_tui.cli.output import print_json
from gpumem_tui.sources.replay import RecordingReader
from tests.fuzz.hostile import header

WORD = re.compile(r"\b(nan|inf|infinity)\b", re.IGNORECASE)


def test_print_json_refuses_nan_and_writes_nothing(capsys):
    with pytest.raises(ValueError):
        print_json({"fine": 1, "then": [float("nan")]})
    assert capsys.readouterr().out == ""


@pytest.fixture(scope="module")
def non_finite(tmp_path_factory):
    """A real demo sample with NaN or an infinity in every float it holds, and its KV usage at 500 %."""
    tmp_path = tmp_path_factory.mktemp("spoiled")
    plain = tmp_path / "plain.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["snapshot", "--demo", "busy-node", "--record", str(plain)]) == 0
    sample = json.loads(next(iter(RecordingReader(plain))).model_dump_json())

    def spoil(node, flip=[0]):  # noqa: B006 - alternates NaN and Infinity across the walk
        for key, value in list(node.items()) if isinstance(node, dict) else enumerate(node):
            if isinstance(value, float) and key != "timestamp":
                flip[0] += 1
                node[key] = float("nan") if flip[0] % 2 else float("inf")
            elif isinstance(value, (dict, list)):
                spoil(value)

    spoil(sample)
    sample["engines"][0]["records"][0]["kv_usage_fraction"] = 5.0
    path = tmp_path / "spoiled.jsonl"
    path.write_text(header() + "\n" + json.dumps(sample) + "\n")
    assert "NaN" in path.read_text() and "Infinity" in path.read_text()
    return path


@pytest.mark.parametrize("command", [["snapshot", "--json"], ["check", "--json"], ["check", "-v"], ["snapshot"]])
def test_non_finite_readings_never_reach_the_output(capsys, non_finite, command):
    main([*command, "--replay", str(non_finite)])
    out = capsys.readouterr().out
    if "--json" in command:
        json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in JSON output"))
    else:
        assert not WORD.search(out), WORD.search(out)
    if command == ["snapshot"]:
        assert "GPU 0: " in out and "power_w " in out and "shown as missing" in out, "what was dropped is said"
        assert "KV cache 500%" in out, "a finite share over 1 is the findings' to question, not dropped"


def test_a_kv_share_over_100_percent_is_said_to_be_implausible(capsys, non_finite):
    main(["snapshot", "--replay", str(non_finite)])
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if "KV cache 500%" in line)
    assert "cannot be true" in lines[at + 1]


def test_metrics_and_snapshot_name_every_value_that_cannot_be_true_as_check_does(tmp_path, capsys, non_finite):
    """`metrics` printed utilization 50 and KV 500 % as plain fact and snapshot questioned only the KV share,
    while check names each value engine_values judges (`engine_value_implausible`)."""
    payload = tmp_path / "m.prom"
    payload.write_text(
        'vllm:kv_cache_usage_perc{model_name="m",engine="0"} 5\n'
        'vllm:cache_config_info{engine="0",gpu_memory_utilization="50",block_size="0"} 1\n'
    )
    assert main(["metrics", str(payload)]) == 0
    out = capsys.readouterr().out
    for says in (
        "KV cache usage 5: not a fraction",
        "utilization 50: not a fraction of the GPU",
        "block size 0: not a block size",
    ):
        assert f"cannot be true: the engine reports {says}" in out, out
    main(["snapshot", "--replay", str(non_finite)])
    out = capsys.readouterr().out
    assert "cannot be true: the engine reports KV cache usage 5: not a fraction" in out, out

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
    line = next(line for line in capsys.readouterr().out.splitlines() if "KV cache 500%" in line)
    assert "implausible" in line

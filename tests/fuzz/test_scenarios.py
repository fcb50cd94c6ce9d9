"""Scenario files from outside: generated TOML (hostile numbers, text, types, nesting, bytes) through the
parser and through `snapshot --demo FILE`. Invariant: a scenario, or one line and exit 2; never a
traceback, a crash code or a hang. Plus the named cases: deep nesting, integers over 4,300 digits, `inf`,
a `gpu_lost` index the node lacks, negative sizes, files that are not UTF-8 or far too long."""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpumem_tui.demo import ScenarioError
from gpumem_tui.demo.node import SimulatedNode
from gpumem_tui.demo.scenario import MAX_DURATION_S, MAX_FILE_BYTES, parse_scenario
from tests.fuzz.conftest import assert_clean, run_cli
from tests.fuzz.hostile import leaves, put

BASE = {
    "name": "fuzzed",
    "description": "a generated scenario",
    "duration_s": 120,
    "start_s": 10,
    "story_s": 20,
    "gpus": [{"model": "h100", "count": 2}],
    "engines": [{"id": "e0", "model": "meta-llama/Llama-3.1-8B-Instruct", "gpus": [0], "port": 8000}],
    "processes": [{"id": "p", "name": "python3", "gpus": [1], "memory_gib": 3.0, "ramp_s": 5.0}],
    "events": [{"at_s": 5, "kind": "traffic", "engine": "e0", "rate": 2.0}, {"at_s": 15, "kind": "gpu_lost", "gpu": 1}],
    "host": {"memory_total_gib": 512.0, "cpu_count": 32},
}


class Digits:
    """An integer written out as TOML digits, however long (Python will not print one over 4,300 digits)."""

    def __init__(self, digits: int):
        self.digits = digits


def toml(data: dict) -> str:
    """A small TOML writer for generated scenarios: tables, arrays of tables, inline arrays, scalars."""
    lines = [f"{key} = {_value(v)}" for key, v in data.items() if not isinstance(v, (dict, list)) or _inline(v)]
    for key, value in data.items():
        if isinstance(value, dict):
            lines += [f"[{key}]", *(f"{k} = {_value(v)}" for k, v in value.items())]
        elif isinstance(value, list) and not _inline(value):
            for item in value:
                lines += [f"[[{key}]]", *(f"{k} = {_value(v)}" for k, v in item.items())]
    return "\n".join(lines) + "\n"


def _inline(value) -> bool:
    return isinstance(value, list) and not (value and all(isinstance(v, dict) for v in value))


def _value(value) -> str:
    if isinstance(value, Digits):
        return "9" * value.digits
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_value(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(_value(v) for v in value) + "]"


NUMBERS = st.sampled_from(
    [math.inf, -math.inf, math.nan, -1, -1.5, -(2**63), 2**63, 2**64, 10**30, 1e300, -1e300, 0, 0.0, 99, 1e9, 86_401]
)
TEXT = st.text(alphabet=st.sampled_from(["\x1b", "\x9b", "\x07", "\n", "[", "]", "x", "é", "\u202e", " "]), max_size=20)
CONFUSED = st.sampled_from([[], {}, "12", True, [1, 2], {"a": 1}, [[1]], Digits(5000)])


@st.composite
def scenarios(draw) -> bytes:
    data = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 5))):
        path, old = draw(st.sampled_from(list(leaves(data))))
        pick = NUMBERS if isinstance(old, (int, float)) else TEXT
        value = copy.deepcopy(draw(st.one_of(pick, CONFUSED)))
        put(data, path, value)
    text = toml(data).encode()
    damage = draw(st.sampled_from(["none", "none", "nest", "bytes", "cut"]))
    if damage == "nest":
        depth = draw(st.sampled_from([10, 1000, 100_000]))
        text = b"deep = " + b"[" * depth + b"]" * depth + b"\n" + text
    elif damage == "bytes":
        text += draw(st.binary(max_size=40))
    elif damage == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    return text


def test_the_generator_makes_a_valid_scenario_when_nothing_is_changed():
    assert parse_scenario(toml(BASE)).name == "fuzzed"


@given(text=scenarios())
def test_fuzz_parse_scenario_gives_a_scenario_or_a_scenario_error(text):
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError:
        return  # files are decoded by load_scenario: see test_fuzz_snapshot_demo_file
    try:
        parse_scenario(decoded, "fuzz.toml")
    except ScenarioError as exc:
        assert "\n" not in str(exc)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(text=scenarios())
def test_fuzz_snapshot_demo_file(capsys, tmp_path, text):
    path = tmp_path / "fuzz.toml"
    path.write_bytes(text)
    steps = [0]
    original = SimulatedNode._step

    def counted(self, now):
        steps[0] += 1
        return original(self, now)

    with pytest.MonkeyPatch.context() as patch:  # bounded work, counted rather than timed
        patch.setattr(SimulatedNode, "_step", counted)
        code, out, err = run_cli(capsys, ["snapshot", "--demo", str(path)])
    assert_clean(code, out, err, exits={0, 2})
    assert code == 0 or len(err.splitlines()) == 1, err
    assert steps[0] <= MAX_DURATION_S + 1, "the node steps once a simulated second, at most a day"


NAMED = {  # TOML put before the base scenario's tables, and words the one line must hold
    "nested": ("deep = " + "[" * 5000 + "]" * 5000, "nested too deeply"),
    "nested tables": ("[" + ".".join(["a"] * 5000) + "]", "a: Extra inputs are not permitted"),
    "nested inline tables": ("deep = " + "{a = " * 5000 + "1" + "}" * 5000, "nested too deeply"),
    "integer over 4,300 digits": ("seed = " + "9" * 5000, "an integer over 4,300 digits"),
    "inf": ("duration_s = inf", "duration_s: Input should be a finite number"),
    "nan": ("start_s = nan", "start_s: Input should be a finite number"),
    "gpu_lost out of range": (
        '[[events]]\nat_s = 15\nkind = "gpu_lost"\ngpu = 9',
        "names GPU 9; the node has GPUs 0 to 1",
    ),
    "gpu_lost negative": ('[[events]]\nat_s = 15\nkind = "gpu_lost"\ngpu = -1', "names GPU -1"),
    "negative memory": ('[[processes]]\nid = "q"\ngpus = [1]\nmemory_gib = -3', "memory_gib: Input should be greater"),
    "negative host": ("[host]\nmemory_total_gib = -5", "memory_total_gib: Input should be greater"),
    "a day and more": ("duration_s = 1e12", "duration_s: Input should be less than or equal to 86400"),
    "a thousand GPUs": ('[[gpus]]\nmodel = "h100"\ncount = 1000', "count: Input should be less than or equal to 64"),
}


@pytest.mark.parametrize("extra, words", NAMED.values(), ids=NAMED.keys())
def test_named_hostile_scenarios_are_one_line_exit_2(capsys, tmp_path, extra, words):
    plain = {k: v for k, v in BASE.items() if k not in ("duration_s", "start_s", "story_s", "host")}
    path = tmp_path / "hostile.toml"
    path.write_text(extra + "\n" + toml(plain) if not extra.startswith("[") else toml(plain) + extra + "\n")
    code, out, err = run_cli(capsys, ["snapshot", "--demo", str(path)])
    assert_clean(code, out, err)
    assert code == 2 and len(err.splitlines()) == 1 and out == "", err
    assert words in err


@pytest.mark.parametrize(
    "content",
    [b'name = "\xff\xfe"\n', b"# " + b"x" * (MAX_FILE_BYTES + 1) + b"\n"],
    ids=["not UTF-8", "over the size a scenario can be"],
)
def test_files_that_are_no_scenario_text_are_one_line_exit_2(capsys, tmp_path, content):
    path = tmp_path / "file.toml"
    path.write_bytes(content + toml(BASE).encode())
    code, out, err = run_cli(capsys, ["snapshot", "--demo", str(path)])
    assert_clean(code, out, err)
    assert code == 2 and len(err.splitlines()) == 1

"""Values an engine reports that cannot be true (utilization 50, max length 0, an unknown KV cache dtype,
block size 0, KV usage 500 %, a negative pool) are a finding of their own; the auto plan leaves that fact
unknown rather than planning with it or with a silent default, and the other findings still appear."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.cli import main
from gpumem_tui.diagnosis.autoplan import engine_plans
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.forensics import Investigation
from gpumem_tui.sources.replay import Recorder

from .build import ENGINE_CMD, LLAMA_8B, codes, engine, gpu, process, sample

BARE_CMD = ["/usr/bin/python3", "/usr/local/bin/vllm", "serve", LLAMA_8B]
"""A command line that states none of the settings: only the metrics do."""

PLAN_FACTS = [
    ("gpu_memory_utilization", 50.0, "utilization 50: not a fraction of the GPU"),
    ("gpu_memory_utilization", -1.0, "utilization is negative (-1): not a reading"),
    ("gpu_memory_utilization", 0.0, "utilization 0: not a fraction of the GPU"),
    ("max_model_len", 0, "max length 0: not a length"),
    ("max_model_len", -5, "max length is negative (-5): not a reading"),
    ("max_model_len", 10**14, "max length 100,000,000,000,000: not a length"),
    ("cache_dtype", "fp3_weird", "KV cache dtype 'fp3_weird': not a KV cache dtype"),
    ("block_size", 0, "block size 0: not a block size"),
    ("block_size", -16, "block size is negative (-16): not a reading"),
]
MEASURED = [
    ("kv_usage_fraction", 5.0, "KV cache usage 5: not a fraction"),
    ("kv_pool_tokens", -10, "KV pool is negative (-10): not a reading"),
    ("num_gpu_blocks", -3, "GPU blocks is negative (-3): not a reading"),
]


def _node(cmdline=BARE_CMD, **record):
    """A healthy 8B engine whose GPU is 91 % full (a headroom warning that must still appear)."""
    return sample(
        gpus=[gpu(used_gib=72.5)], processes=[process(2100, 72.5, cmdline=cmdline)], engines=[engine(**record)]
    )


@pytest.mark.parametrize(("field", "value", "says"), PLAN_FACTS + MEASURED)
def test_the_judge_path_names_the_value_and_keeps_the_other_findings(catalog, field, value, says):
    walk = Investigation(catalog, None, Thresholds())
    for t in range(3):
        walk.add(_node(**{field: value}).model_copy(update={"timestamp": 1000.0 + t}))
    [implausible] = [f for f in walk.findings if f.code == "engine_value_implausible"]
    assert implausible.severity == "warning" and says in implausible.title
    assert "headroom_low" in codes(walk.findings)
    [plan] = walk.plans
    if (field, value, says) in PLAN_FACTS:  # that fact is unknown: no plan, never one from a default
        assert plan.prediction is None and "unknown" in plan.missing and says.split(":")[0].split()[-1] in plan.missing
    else:  # a measurement that cannot be true is not judged: no saturation at "500 %", no pool of -10
        assert plan.prediction is not None
        assert not codes(walk.findings) & {"kv_saturated", "kv_pool_short", "context_too_long"}


def test_a_plausible_command_line_value_stands_in_for_an_implausible_metric(catalog):
    [plan] = engine_plans(_node(cmdline=ENGINE_CMD, max_model_len=0), catalog)  # the command line says 8192
    assert plan.prediction is not None and plan.settings.max_model_len == 8192
    assert "max length 8192 (from the command line)" in plan.found


def test_an_implausible_command_line_is_no_plan_either(catalog):
    cmd = [*BARE_CMD, "--gpu-memory-utilization", "7", "--block-size", "0"]
    [plan] = engine_plans(_node(cmdline=cmd, gpu_memory_utilization=None, block_size=None), catalog)
    assert plan.prediction is None
    assert "utilization unknown: the command line state 7" in plan.missing and "block size unknown" in plan.missing


def test_check_replay_of_such_a_recording_lists_every_finding(tmp_path, capsys):
    path = tmp_path / "rec.jsonl"
    with Recorder(path) as recorder:
        for t in range(3):
            recorder.write(
                _node(gpu_memory_utilization=50.0, kv_usage_fraction=5.0, cache_dtype="weird").model_copy(
                    update={"timestamp": 1000.0 + t}
                )
            )
    code = main(["check", "--replay", str(path), "--json"])
    out, err = capsys.readouterr()
    assert code == 1 and err == ""
    data = json.loads(out)
    found = {f["code"]: f for f in data["findings"]}
    assert {"engine_value_implausible", "headroom_low"} <= set(found)
    explained = found["engine_value_implausible"]["explanation"]
    assert "utilization 50" in explained and "KV cache usage 5" in explained and "'weird'" in explained
    assert "utilization unknown" in data["plans"][0]["missing"]


@pytest.mark.parametrize(
    ("record", "shown"),
    [
        ({"gpu_memory_utilization": 50.0}, "utilization 50: not a fraction"),
        ({"model": "/" + "x" * 256}, "memory nearly full on GPU 0"),
    ],  # a name that is no path the system can look up
    ids=["utilization-50", "name-256-bytes"],
)
async def test_the_tui_shows_findings_instead_of_crashing(catalog, tmp_path, record, shown):
    from gpumem_tui.app.app import GpuMemApp
    from gpumem_tui.diagnosis.judge import Judge
    from gpumem_tui.sources.feed import ReplayFeed
    from gpumem_tui.sources.replay import ReplaySource
    from tests.app.conftest import settle, text_of

    path = tmp_path / "rec.jsonl"
    with Recorder(path) as recorder:
        for t in range(3):
            recorder.write(_node(**record).model_copy(update={"timestamp": 1000.0 + t}))
    app = GpuMemApp(ReplayFeed(ReplaySource(path, clock=lambda: 0.0), "rec.jsonl"), Judge(catalog), poll=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        findings = text_of(app.screen.query_one("#findings"))
        assert shown in findings and "refresh failed" not in findings
        assert app.is_running


LIVE = [
    ('vllm:kv_cache_usage_perc{model_name="m"} NaN', "kv_usage_fraction"),
    ('vllm:kv_cache_usage_perc{model_name="m"} 7', "kv_usage_fraction"),
    ('vllm:num_requests_running{model_name="m"} -3', "requests_running"),
    ('vllm:num_requests_waiting{model_name="m"} +Inf', "requests_waiting"),
    ('vllm:num_requests_waiting{model_name="m"} 1e18', "requests_waiting"),
    ('vllm:cache_config_info{gpu_memory_utilization="-0.5",block_size="16"} 1', "gpu_memory_utilization"),
    ('vllm:cache_config_info{gpu_memory_utilization="NaN",block_size="16"} 1', "gpu_memory_utilization"),
    ('vllm:cache_config_info{gpu_memory_utilization="0.9",block_size="-16"} 1', "block_size"),
]


@pytest.mark.parametrize(("line", "field"), LIVE, ids=[f"{f}-{line.split()[-1]}" for line, f in LIVE])
def test_a_live_payload_value_that_cannot_be_true_is_named_as_from_a_recording(line, field):
    """The parser and the record once each dropped part: a NaN or negative from /metrics became a note and
    no finding, while the same value in a recording was `engine_value_implausible`."""
    from gpumem_tui.diagnosis.engine_values import implausible
    from gpumem_tui.sources.engines.parse import parse_metrics

    payload = f'vllm:prefix_cache_queries_total{{model_name="m"}} 0\n{line}\n'
    [record] = parse_metrics(payload)
    assert field in {value.field for value in implausible(record)}
    assert getattr(plausible_record(record), field) is None


@pytest.mark.parametrize("length", [0, -4096, 10**30])
def test_a_models_list_length_that_cannot_be_true_is_named(length):
    from gpumem_tui.diagnosis.engine_values import implausible
    from gpumem_tui.engine_records import EngineRecord
    from gpumem_tui.sources.engines.models_api import merge_models, parse_models

    served = parse_models(json.dumps({"data": [{"id": "m", "max_model_len": length}]}))
    [record] = merge_models([EngineRecord(engine="vllm", model="m")], served)
    [named] = implausible(record)
    assert named.field == "max_model_len" and plausible_record(record).max_model_len is None


def plausible_record(record):
    from gpumem_tui.diagnosis.engine_values import plausible

    return plausible(record)


async def test_the_engine_card_does_not_draw_what_the_findings_call_untrue(catalog, tmp_path):
    """The card drew a full red KV gauge at "500%" under the finding that says KV usage 5 cannot be true."""
    from gpumem_tui.app.app import GpuMemApp
    from gpumem_tui.app.widgets.engine_card import EngineCard
    from gpumem_tui.diagnosis.judge import Judge
    from gpumem_tui.sources.feed import ReplayFeed
    from gpumem_tui.sources.replay import ReplaySource
    from tests.app.conftest import settle

    path = tmp_path / "rec.jsonl"
    with Recorder(path) as recorder:
        for t in range(3):
            recorder.write(_node(kv_usage_fraction=5.0, max_model_len=0).model_copy(update={"timestamp": 1000.0 + t}))
    app = GpuMemApp(ReplayFeed(ReplaySource(path, clock=lambda: 0.0), "rec.jsonl"), Judge(catalog), poll=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        [card] = app.screen.query(EngineCard)
        shown = card.render().plain
        assert "500%" not in shown and "max len 0" not in shown, shown
        assert "KV cache  n/a (the engine reports 500 %, which cannot be true)" in shown, shown


def test_a_record_is_judged_once_however_many_rules_ask(catalog, monkeypatch):
    """A dozen rules, in each unit, ask whether the same record's values can be true: each value is looked at
    once per record, and the answers are the ones a fresh look gives."""
    from gpumem_tui.diagnosis import engine_values

    looked: list[str] = []
    why = engine_values.why_implausible
    monkeypatch.setattr(engine_values, "why_implausible", lambda field, v: looked.append(field) or why(field, v))
    node = _node(kv_usage_fraction=5.0, max_model_len=0)
    walk = Investigation(catalog, None, Thresholds())
    walk.add(node)
    assert sorted(looked) == sorted(engine_values.LABELS)
    assert "engine_value_implausible" in codes(walk.findings)
    record = node.engines[0].records[0]
    assert [v.field for v in engine_values.implausible(record)] == ["max_model_len", "kv_usage_fraction"]
    assert engine_values.plausible(record).kv_usage_fraction is None
    assert engine_values.plausible(record).max_model_len is None

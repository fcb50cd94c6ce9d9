"""Fuzzing `/v1/models`: JSON of the wrong types, nested deeply, with huge or odd numbers and missing
fields, through the models-list parser and through `gpumem-tui metrics URL` (which asks /v1/models
beside /metrics) against a loopback server. The invariant: records or a worded MetricsError, a
documented exit, no traceback, no raw escape byte, strict JSON, finite plausible numbers."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.sources.engines.models_api import merge_models, parse_models
from gpumem_tui.sources.engines.prometheus import MetricsError
from tests.fuzz.conftest import assert_clean, assert_judged, run_cli
from tests.fuzz.payload_server import PayloadServer

HOSTILE_TEXT = st.text(alphabet=st.sampled_from('\x1b\x9b\x00\u202e"\\\n[]/ab-Z9é'), max_size=20)
NUMBERS = st.sampled_from([0, -1, 1, 8192, 2**63, 10**300, -(10**30), 1.5, math.nan, math.inf, -math.inf, True])
LEAF = st.none() | st.booleans() | NUMBERS | st.integers() | st.floats() | HOSTILE_TEXT
JSON = st.recursive(
    LEAF, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(HOSTILE_TEXT, inner, max_size=4), max_leaves=12
)
ENTRY = st.fixed_dictionaries(
    {}, optional={"id": HOSTILE_TEXT | JSON, "max_model_len": NUMBERS | JSON, "object": JSON, "root": JSON}
)


@st.composite
def bodies(draw) -> str:
    """A models list of odd entries, another shape of JSON, a deep nesting, a huge integer or not JSON."""
    kind = draw(st.sampled_from(["list", "list", "json", "deep", "huge_int", "text"]))
    if kind == "list":
        data = draw(st.lists(ENTRY, max_size=6) | JSON)
        return json.dumps({"object": "list", "data": data}, allow_nan=True)
    if kind == "json":
        return json.dumps(draw(JSON), allow_nan=True)
    if kind == "deep":
        depth = draw(st.sampled_from([50, 5_000, 100_000]))
        return '{"data": ' + "[" * depth + "]" * depth + "}"
    if kind == "huge_int":
        digits = draw(st.sampled_from([20, 400, 5_000]))
        return '{"data": [{"id": "m", "max_model_len": ' + "9" * digits + "}]}"
    return draw(st.text(max_size=200))


@given(bodies())
def test_models_list_is_entries_or_a_worded_error(text: str) -> None:
    try:
        served = parse_models(text)
    except MetricsError as exc:
        assert str(exc).startswith("/v1/models is not an OpenAI model list")
        return
    for model in served:
        assert isinstance(model.id, str)
        assert model.max_model_len is None or type(model.max_model_len) is int
    records = [EngineRecord(engine="vllm", model=m.id) for m in served[:3]] + [EngineRecord(engine="vllm")]
    assert_judged(merge_models(records, served))


def test_an_impossible_length_is_missing_with_a_note() -> None:
    served = parse_models(
        '{"data": [{"id": "m", "max_model_len": -4096}, {"id": "n", "max_model_len": 8192},'
        ' {"id": "o", "max_model_len": 4096.5}]}'
    )
    m, n, o = merge_models([EngineRecord(engine="vllm", model=x) for x in "mno"], served)
    assert m.max_model_len is None and any("max_model_len negative (-4,096)" in x for x in m.notes)
    assert m.dropped == {"max_model_len": "negative (-4,096)"}
    assert n.max_model_len == 8192 and n.notes == []
    assert o.max_model_len is None and any("max_model_len 4096.5; shown as missing" in x for x in o.notes)


@pytest.fixture(scope="module")
def server():
    with PayloadServer() as running:
        running.metrics = b'vllm:num_requests_running{model_name="m",engine="0"} 1\n'
        yield running


@settings(
    max_examples=min(12, settings.default.max_examples),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(bodies())
def test_metrics_url_with_a_hostile_models_list_stays_clean(capsys, server, text: str) -> None:
    server.models = text.encode("utf-8", errors="surrogatepass")
    for json_out in (False, True):
        code, out, err = run_cli(capsys, ["metrics", server.url, *(["--json"] if json_out else [])])
        assert_clean(code, out, err, exits={0}, json_out=json_out)
        if json_out:
            assert_judged([EngineRecord(**r) for r in json.loads(out)])

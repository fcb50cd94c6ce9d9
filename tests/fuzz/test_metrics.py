"""Fuzzing /metrics: generated Prometheus text (the engines' families with hostile label values, odd
numbers, duplicate series, up to 10,000 model names, and text that is not Prometheus at all) through
`parse_metrics`, `gpumem-tui metrics FILE` and `gpumem-tui metrics URL` against a loopback server.

The invariant: a documented exit, no traceback, no raw escape byte, strict JSON, and records that hold
only finite, plausible numbers and at most MAX_SERVED models per engine kind."""

from __future__ import annotations

import contextlib
import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpumem_tui.sources.engines.parse import ALL_FAMILIES, parse_metrics
from gpumem_tui.sources.engines.prometheus import MetricsError
from gpumem_tui.sources.engines.series import MAX_SERVED
from tests.fuzz.conftest import assert_clean, assert_judged, run_cli
from tests.fuzz.payload_server import PayloadServer

WITH_FIXTURES = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
HOSTILE = '\x1b\x9b\x07\x00\u202e"\\\n\r\t{}=,# [red]x[/red]'
NUMBERS = [
    "0",
    "1",
    "0.5",
    "-1",
    "-0",
    "NaN",
    "+Inf",
    "-Inf",
    "1e308",
    "1e400",
    "-1e400",
    "4.2e-320",
    "18446744073709551616",
    "9" * 400,
    "0x10",
    "1_000",
    "",
    "one",
]
LABELS = (
    "model_name",
    "engine",
    "name",
    "tp_rank",
    "block_size",
    "num_gpu_blocks",
    "kv_cache_size_tokens",
    "cache_dtype",
    "gpu_memory_utilization",
)

label_value = st.text(alphabet=st.sampled_from(HOSTILE + "abcAZ09/-._é漢"), max_size=24) | st.sampled_from(NUMBERS)
number = (
    st.sampled_from(NUMBERS)
    | st.floats(allow_nan=True, allow_infinity=True).map(repr)
    | st.integers(-(2**80), 2**80).map(str)
)
family = st.sampled_from(sorted(ALL_FAMILIES)) | st.sampled_from(["vllm:other", "x", "vllm:kv_cache_usage_perc_x"])


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@st.composite
def series_line(draw) -> str:
    labels = draw(st.dictionaries(st.sampled_from(LABELS), label_value, max_size=4))
    raw = draw(st.booleans()) and draw(st.integers(0, 9)) == 0  # now and then, an unescaped label value
    body = ",".join(f'{k}="{v if raw else escape(v)}"' for k, v in labels.items())
    return f"{draw(family)}{{{body}}} {draw(number)}" if body else f"{draw(family)} {draw(number)}"


@st.composite
def payloads(draw, most_models: int = 10_000) -> str:
    """Series of the wanted families and others, TYPE lines, a duplicate, `models` generated names (the
    scale: 0 to most_models), a line of anything, shuffled, with or without the final line feed."""
    lines = draw(st.lists(series_line(), max_size=30))
    if draw(st.booleans()):
        lines += [f"# TYPE {draw(family)} gauge", "# HELP x " + draw(label_value)]
    if draw(st.booleans()) and lines:
        lines.append(draw(st.sampled_from(lines)))  # a duplicate series
    models = draw(st.sampled_from([n for n in (0, 0, 1, MAX_SERVED, MAX_SERVED + 1, 300, 10_000) if n <= most_models]))
    gauge = draw(st.sampled_from(["vllm:num_requests_running", "sglang:token_usage", "vllm:kv_cache_usage_perc"]))
    odd = escape(draw(label_value))
    lines += [f'{gauge}{{model_name="m{i}{odd if i < 3 else ""}"}} {i % 3}' for i in range(models)]
    if draw(st.booleans()):
        lines.append(draw(st.text(max_size=200)))  # a line of anything
    text = "\n".join(draw(st.permutations(lines)) if len(lines) < 40 else lines)
    return text + ("\n" if draw(st.booleans()) else "")


def assert_plausible(records) -> None:
    """Readings only, judged (`assert_judged`); at most MAX_SERVED records per engine kind."""
    assert_judged(records)
    kinds: dict[str, int] = {}
    for record in records:
        kinds[record.engine] = kinds.get(record.engine, 0) + 1
    assert all(count <= MAX_SERVED for count in kinds.values()), kinds


@given(payloads(), st.booleans())
def test_parse_metrics_returns_plausible_records_or_says_why(text: str, whole: bool) -> None:
    try:
        records = parse_metrics(text, whole=whole)
    except MetricsError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert records
    assert_plausible(records)


@given(st.binary(max_size=600) | st.text(max_size=600))
def test_anything_at_all_is_records_or_metrics_error(blob) -> None:
    text = blob.decode("utf-8", errors="replace") if isinstance(blob, bytes) else blob
    with contextlib.suppress(MetricsError):
        assert_plausible(parse_metrics(text, whole=False))


@WITH_FIXTURES
@given(payloads(most_models=300))
def test_metrics_file_command_stays_clean(capsys, text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "metrics.txt")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(text)
        for json_out in (False, True):
            code, out, err = run_cli(capsys, ["metrics", path, *(["--json"] if json_out else [])])
            assert_clean(code, out, err, exits={0, 2}, json_out=json_out)


@pytest.fixture(scope="module")
def server():
    with PayloadServer() as running:
        yield running


@settings(WITH_FIXTURES, max_examples=min(12, settings.default.max_examples))
@given(payloads(most_models=300))
def test_metrics_url_command_stays_clean(capsys, server, text: str) -> None:
    server.metrics = text.encode("utf-8", errors="surrogateescape")
    for json_out in (False, True):
        code, out, err = run_cli(capsys, ["metrics", server.url, *(["--json"] if json_out else [])])
        assert_clean(code, out, err, exits={0, 2, 3}, json_out=json_out)

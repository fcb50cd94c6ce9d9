"""Fuzz what an engine reports (utilization, max length, block size, KV cache dtype, usage, pool, counts) through
the auto plan and every finding, as the TUI judges a sample, and through `check --replay` of a recording.
Invariant: nothing raises, a plan's terms are finite and >= 0, a value that cannot be true is named by
`engine_value_implausible` and never planned with, and `check` exits as documented with strict JSON."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpumem_tui.catalog import load_catalog
from gpumem_tui.diagnosis.engine_values import why_implausible
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.forensics import Investigation
from gpumem_tui.sources.replay import Recorder
from tests.diagnosis.build import LLAMA_8B, engine, gpu, process, sample
from tests.fuzz.conftest import assert_clean, run_cli

CATALOG = load_catalog()
BARE_CMD = ["vllm", "serve", LLAMA_8B]
PREDICTED = [
    "weights_bytes",
    "non_torch_bytes",
    "activation_peak_bytes",
    "cudagraph_bytes",
    "total_gpu_memory_bytes",
    "block_size",
    "max_model_len",
    "num_gpu_blocks",
    "kv_cache_tokens",
]

counts = st.one_of(
    st.none(), st.integers(min_value=-(10**20), max_value=10**20), st.sampled_from([0, 1, 16, 8192, 2**31, 10**9, -1])
)
fractions = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-2, max_value=2),
    st.sampled_from([0.0, 1.0, 50.0, 1e-9, 1.0000001]),
)
dtypes = st.one_of(
    st.none(), st.sampled_from(["auto", "fp8", "FP8_E4M3", "bf16", "int4", "", "fp3", "\x1b[2J"]), st.text(max_size=12)
)
records = st.fixed_dictionaries(
    {},
    optional={
        "gpu_memory_utilization": fractions,
        "kv_usage_fraction": fractions,
        "cpu_cache_usage_fraction": fractions,
        "prefix_cache_hit_rate": fractions,
        "max_model_len": counts,
        "block_size": counts,
        "num_gpu_blocks": counts,
        "kv_pool_tokens": counts,
        "requests_running": counts,
        "requests_waiting": counts,
        "cache_dtype": dtypes,
        "preemptions_per_min": fractions,
    },
)
flags = st.lists(
    st.tuples(
        st.sampled_from(
            ["--gpu-memory-utilization", "--block-size", "--max-model-len", "--kv-cache-dtype", "--quantization"]
        ),
        st.one_of(st.text(max_size=6), counts.map(str), fractions.map(str)),
    ),
    max_size=3,
)


def _samples(record: dict, extra_flags: list) -> list:
    cmd = BARE_CMD + [part for flag in extra_flags for part in flag]
    return [
        sample(
            t=1000.0 + t,
            gpus=[gpu(used_gib=72)],
            processes=[process(2100, 72, cmdline=cmd)],
            engines=[engine(**record)],
        )
        for t in range(2)
    ]


@given(record=records, extra_flags=flags)
def test_engine_values_through_the_judge(record, extra_flags):
    walk = Investigation(CATALOG, None, Thresholds())
    for moment in _samples(record, extra_flags):
        walk.add(moment)
    bad = {field for field, value in record.items() if why_implausible(field, value)}
    codes = {f.code for f in walk.findings}
    assert ("engine_value_implausible" in codes) == bool(bad)
    [plan] = walk.plans
    if plan.prediction is not None:
        for term in PREDICTED:
            value = getattr(plan.prediction, term)
            assert math.isfinite(value) and value >= 0, (term, value)
        settings_used = plan.settings
        assert why_implausible("gpu_memory_utilization", settings_used.utilization) is None
        assert why_implausible("cache_dtype", settings_used.kv_cache_dtype) is None
        assert settings_used.block_size is None or why_implausible("block_size", settings_used.block_size) is None
    for finding in walk.findings:
        text = finding.title + finding.explanation
        assert "nan" not in text.lower().split() and " inf " not in text


@settings(max_examples=12, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(record=records, extra_flags=flags)
def test_engine_values_through_check_replay(capsys, record, extra_flags):
    with tempfile.TemporaryDirectory() as where:
        path = Path(where, "rec.jsonl")
        with Recorder(path) as recorder:
            for moment in _samples(record, extra_flags):
                recorder.write(moment)
        for argv in (["check", "--replay", str(path), "--json"], ["check", "--replay", str(path), "--verbose"]):
            code, out, err = run_cli(capsys, argv)
            assert_clean(code, out, err, exits={0, 1, 2}, json_out="--json" in argv)

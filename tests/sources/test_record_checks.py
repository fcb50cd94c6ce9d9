"""Records validate what they accept: every number that cannot be a reading (NaN, infinite, negative,
beyond 64 bits) in every record arrives as missing with a note naming it; a GPU index reported twice keeps
its first card; a timestamp that is no moment refuses the sample. Engine values above 1 stay as reported."""

from __future__ import annotations

import math

import pytest
from pydantic import BaseModel, ValidationError

from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.models import GpuRecord, HostRecord, MigInstance, ProcessRecord, Sample
from gpumem_tui.readings import IDENTIFIERS, SIGNED

BAD = [float("nan"), float("inf"), float("-inf"), -1, 2**64, -(2**70)]


def _numeric_fields(cls: type[BaseModel]) -> list[str]:
    """Every int or float reading of a record class (identifiers aside), found from its annotations."""
    return [
        name
        for name, field in cls.model_fields.items()
        if name not in IDENTIFIERS
        and any(t in str(field.annotation) for t in ("int", "float"))
        and "list" not in str(field.annotation)
        and "bool" not in str(field.annotation)
    ]


def _sample(**parts) -> Sample:
    return Sample(timestamp=1_767_225_600, hostname="node", source="test", **parts)


def _in(record: BaseModel) -> Sample:
    if isinstance(record, GpuRecord):
        return _sample(gpus=[record])
    if isinstance(record, MigInstance):
        return _sample(gpus=[GpuRecord(index=0, mig_instances=[record])])
    if isinstance(record, ProcessRecord):
        return _sample(processes=[record])
    if isinstance(record, HostRecord):
        return _sample(host=record)
    return _sample(engines=[record])


CASES = [
    (GpuRecord, {"index": 0}),
    (MigInstance, {"gpu_instance_id": 1}),
    (ProcessRecord, {"pid": 1, "gpu_index": 0}),
    (HostRecord, {}),
    (EndpointStatus, {"url": "http://127.0.0.1:8000", "state": "ok"}),
]


@pytest.mark.parametrize("cls, required", CASES, ids=lambda c: getattr(c, "__name__", ""))
@pytest.mark.parametrize("value", BAD, ids=repr)
def test_every_unreadable_number_in_a_sample_becomes_missing_and_is_noted(cls, required, value):
    fields = _numeric_fields(cls)
    assert fields
    for name in fields:
        if name in SIGNED and isinstance(value, int) and abs(value) < 2**64:
            continue
        sample = _in(cls(**required, **{name: value}))
        records = [
            *sample.gpus,
            *[m for g in sample.gpus for m in g.mig_instances],
            *sample.processes,
            *([sample.host] if sample.host else []),
            *sample.engines,
        ]
        record = next(r for r in records if isinstance(r, cls))
        assert getattr(record, name) is None, name
        assert any(name in e.message and "not a reading" in e.message for e in sample.errors), name
        assert not any("nan" in e.message.lower().split() for e in sample.errors)


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_every_unreadable_engine_number_becomes_missing_with_a_note(value):
    for name in _numeric_fields(EngineRecord):
        record = EngineRecord(engine="vllm", **{name: value})
        assert getattr(record, name) is None and any(name in note for note in record.notes), name


def test_engine_values_above_one_and_a_cold_card_stay_as_reported():
    """Implausible but finite engine values are for the findings to question, not for the record to drop."""
    assert EngineRecord(engine="vllm", kv_usage_fraction=5.0, gpu_memory_utilization=50).kv_usage_fraction == 5.0
    sample = _sample(gpus=[GpuRecord(index=0, temperature_c=-3)])
    assert sample.gpus[0].temperature_c == -3 and not sample.errors


def test_a_gpu_index_reported_twice_keeps_the_first_card_and_says_so():
    sample = _sample(gpus=[GpuRecord(index=0, name="first"), GpuRecord(index=1), GpuRecord(index=0, name="second")])
    assert [(g.index, g.name) for g in sample.gpus] == [(0, "first"), (1, None)]
    assert [e.message for e in sample.errors] == ["GPU 0 was reported twice; the second record dropped"]


def test_a_sample_read_back_is_the_sample_written():
    """Cleaning is done once: a cleaned sample read back is equal, its notes not repeated."""
    sample = _sample(gpus=[GpuRecord(index=0, memory_used_bytes=-1), GpuRecord(index=0)])
    assert Sample.model_validate_json(sample.model_dump_json()) == sample and len(sample.errors) == 2


@pytest.mark.parametrize("timestamp", [float("nan"), float("inf"), -1.0, 1e300, 253_402_300_800.0])
def test_a_timestamp_that_is_no_moment_refuses_the_sample(timestamp):
    with pytest.raises(ValidationError, match="timestamp"):
        Sample(timestamp=timestamp, hostname="n", source="s")
    assert math.isfinite(Sample(timestamp=253_402_300_799.0, hostname="n", source="s").timestamp)


def test_a_recorded_dropped_table_names_only_readings_in_a_few_words():
    """`dropped` comes back from a recording: a key that is no reading, or a reason of 5,000 characters,
    reached the finding's title as written (`engine_value_implausible`)."""
    from gpumem_tui.engine_records import EngineRecord

    record = EngineRecord(
        engine="vllm",
        dropped={"kv_usage_fraction": "negative (-2)" + "A" * 5000, "\x1b[2Jbogus": "x", "model": "not a number"},
    )
    assert list(record.dropped) == ["kv_usage_fraction"]
    assert len(record.dropped["kv_usage_fraction"]) <= 60 and record.dropped["kv_usage_fraction"].endswith("...")

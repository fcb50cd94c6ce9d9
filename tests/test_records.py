"""`records.updated`, the fleet's copy of 10^4 engines a refresh, is `model_copy(update=...)` in all it keeps."""

import pytest
from pydantic import ValidationError

from gpumem_tui.records import updated
from gpumem_tui.sources.prometheus.records import FleetEngine

TEMPLATE = FleetEngine(model_name="m", pod="p", gpus=["GPU-1"], settings={"block_size": "16"}, join_reason="found")
CHANGES = {"kv_usage_fraction": 0.5, "requests_running": 3.0, "unknown": {"requests_waiting": "why"}}


def test_updated_is_model_copy():
    mine, theirs = updated(TEMPLATE, dict(CHANGES)), TEMPLATE.model_copy(update=dict(CHANGES))
    assert type(mine) is FleetEngine
    assert mine == theirs
    assert mine.__dict__ == theirs.__dict__
    assert mine.model_fields_set == theirs.model_fields_set == {*TEMPLATE.model_fields_set, *CHANGES}
    assert mine.model_dump_json() == theirs.model_dump_json()
    assert mine.model_dump(exclude_unset=True) == theirs.model_dump(exclude_unset=True)


def test_updated_leaves_the_record_it_copies_as_it_was():
    before = TEMPLATE.model_dump()
    copied = updated(TEMPLATE, {"kv_usage_fraction": 0.9})
    assert TEMPLATE.model_dump() == before and TEMPLATE.model_fields_set == {
        "model_name",
        "pod",
        "gpus",
        "settings",
        "join_reason",
    }
    assert copied.kv_usage_fraction == 0.9 and copied.gpus == ["GPU-1"]


def test_an_updated_record_is_still_frozen():
    copied = updated(TEMPLATE, {"kv_usage_fraction": 0.9})
    with pytest.raises(ValidationError):
        copied.kv_usage_fraction = 0.1  # type: ignore[misc]

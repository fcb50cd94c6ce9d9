"""The bases of every record the layers pass on. A record is built once and never changed, so a sample, a plan
or a finding can be shared between threads, kept in a history and compared by value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

R = TypeVar("R", bound="Record")


class Record(BaseModel):
    """A pydantic model that cannot be changed once built."""

    model_config = ConfigDict(frozen=True)


class FiniteRecord(Record):
    """A record that refuses NaN and infinity as it is built: a question asked of the planner, a catalog
    entry, a scenario file, whose numbers must be real ones."""

    model_config = ConfigDict(allow_inf_nan=False)


def updated(record: R, changes: Mapping[str, Any]) -> R:
    """`record.model_copy(update=changes)` (no validation, a shallow copy) at under half its cost, for a loop
    that copies 10^4 records each refresh (the fleet's engines). A record has no extra or private attributes,
    so its fields and which were set are all there is to copy (tests/test_records.py holds the two equal)."""
    copied = object.__new__(type(record))
    fields = record.__dict__.copy()
    fields.update(changes)
    _set_dict(copied, fields)
    were = record.__pydantic_fields_set__  # shared where it holds the changes: a frozen record never adds to it
    _set_fields_set(copied, were if changes.keys() <= were else were | changes.keys())
    _set_extra(copied, None)
    _set_private(copied, None)
    return copied


_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
"""BaseModel's slots set directly: `object.__setattr__` looks each up first (a tenth of the copy)."""

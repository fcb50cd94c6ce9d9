"""Which numbers a record may hold as a reading: finite, not negative (a temperature may be), and within
what a 64-bit counter can hold. Records drop any other number as it arrives and say in words what they
dropped, so a broken driver, engine or recording shows a missing reading, never a false one or a crash."""

from __future__ import annotations

import math
import types
import typing
from functools import cache
from typing import Any

from pydantic import BaseModel, PrivateAttr, model_validator

from gpumem_tui.records import Record

LIMIT = 2**64
"""NVML and the engines count in 64 bits at most."""
SIGNED = frozenset({"temperature_c"})
IDENTIFIERS = frozenset({"index", "pid", "gpu_index", "gpu_instance_id", "compute_instance_id", "timestamp"})
"""Not readings: a record without them is no record (a GPU index reported twice is the sample's to drop,
a timestamp that is no moment refuses its sample)."""


@cache
def reading_fields(cls: type[BaseModel]) -> frozenset[str]:
    """The fields of a record class that hold one number (int or float, identifiers and flags aside)."""
    return frozenset(
        name for name, field in cls.model_fields.items() if name not in IDENTIFIERS and _numeric(field.annotation)
    )


def _numeric(annotation: Any) -> bool:
    """`int`, `float`, or either or None: one number (a list of them, a flag or text is not a reading)."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    kinds = set(typing.get_args(annotation)) - {type(None)} if union else {annotation}
    return bool(kinds) and kinds <= {int, float}


def unreadable(cls: type[BaseModel], data: Any) -> dict[str, str]:
    """The readings in `data` (a record's input as a mapping) that cannot be readings: name -> why."""
    if not isinstance(data, dict):
        return {}
    bad = {}
    for name in reading_fields(cls) & data.keys():
        value = data[name]
        if type(value) in (int, float) and 0 <= value < LIMIT:
            continue  # the common reading, looked at without a call (a record is built for every reading)
        why = _why(value, signed=name in SIGNED)
        if why:
            bad[name] = why
    return bad


def _why(value: object, signed: bool) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None  # not a number at all: the record's own validation says so
    if isinstance(value, float) and math.isnan(value):
        return "not a number"
    if isinstance(value, float) and math.isinf(value):
        return "infinite"
    if abs(value) >= LIMIT:
        return "beyond a 64-bit counter"
    if value < 0 and not signed:
        return f"negative ({value:,})" if isinstance(value, int) else f"negative ({value:g})"
    return None


def dropped(bad: dict[str, str]) -> str:
    """`memory_used_bytes negative (-5,368,709,120) is not a reading; shown as missing`."""
    fields = ", ".join(f"{name} {why}" for name, why in sorted(bad.items()))
    return f"{fields} {'is not a reading' if len(bad) == 1 else 'are not readings'}; shown as missing"


class ReadingsRecord(Record):
    """A frozen record that takes only readings: any other number is missing as it is built, and `dropped`
    says which and why, for the sample to note under its source (`models.py`, `EndpointStatus`)."""

    _dropped: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _readings_only(cls, data: object, handler):
        bad = unreadable(cls, data)
        record = handler({**data, **dict.fromkeys(bad)} if bad and isinstance(data, dict) else data)
        if bad:
            record._dropped = bad
        return record

    @property
    def dropped(self) -> dict[str, str]:
        """Readings that arrived as something no reading can be: name -> why."""
        return self._dropped


def settle(record: BaseModel, update: dict[str, object]) -> None:
    """Set fields of a frozen record from its own "after" validator, while it is still being built (pydantic
    does not let a validator called from `__init__` hand back another instance)."""
    record.__dict__.update(update)

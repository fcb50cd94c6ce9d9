"""The bases of every record the layers pass on. A record is built once and never changed, so a sample, a plan
or a finding can be shared between threads, kept in a history and compared by value."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A pydantic model that cannot be changed once built."""

    model_config = ConfigDict(frozen=True)


class FiniteRecord(Record):
    """A record that refuses NaN and infinity as it is built: a question asked of the planner, a catalog
    entry, a scenario file, whose numbers must be real ones."""

    model_config = ConfigDict(allow_inf_nan=False)

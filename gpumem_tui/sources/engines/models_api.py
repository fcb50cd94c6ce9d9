"""The OpenAI-style `/v1/models` answer: served model ids and vLLM's `max_model_len`, merged into records."""

from __future__ import annotations

import json
from dataclasses import dataclass

from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.sources.engines.prometheus import MetricsError


@dataclass(frozen=True)
class ServedModel:
    """One entry of `/v1/models`."""

    id: str
    max_model_len: int | None
    """As stated when it is a whole number (the record drops and `engine_values` names what cannot be true)."""
    note: str | None = None
    """Why a stated max_model_len is shown as missing (not a whole number)."""


def parse_models(text: str) -> list[ServedModel]:
    """`{"data": [{"id": ..., "max_model_len": ...}]}` -> entries; MetricsError for anything else.
    Entries whose id is not a string are skipped; a length that is no whole number is missing, with a note."""
    try:
        body = json.loads(text)
        entries = body["data"]
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise MetricsError(f"/v1/models is not an OpenAI model list ({type(exc).__name__})") from None
    if not isinstance(entries, list):
        raise MetricsError("/v1/models is not an OpenAI model list (data is not a list)")
    return [_entry(e) for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]


def _entry(entry: dict) -> ServedModel:
    raw = entry.get("max_model_len")
    if raw is None or (isinstance(raw, int) and not isinstance(raw, bool)):
        return ServedModel(entry["id"], raw)
    shown = f"{raw:g}" if isinstance(raw, float) else type(raw).__name__
    return ServedModel(
        entry["id"], None, f"/v1/models states max_model_len {shown}; shown as missing (not a whole number of tokens)"
    )


def merge_models(records: list[EngineRecord], served: list[ServedModel]) -> list[EngineRecord]:
    """Fill max_model_len by model id; a record without a model name takes the only served id. The record is
    built again, so a length no reading can be is dropped and named as one from /metrics is."""
    by_id = {m.id: m for m in served}
    out = []
    for record in records:
        match = by_id.get(record.model or "") or (served[0] if record.model is None and len(served) == 1 else None)
        if match is None:
            out.append(record)
            continue
        notes = [*record.notes, match.note] if match.note and record.max_model_len is None else record.notes
        length = record.max_model_len if record.max_model_len is not None else match.max_model_len
        out.append(
            EngineRecord.model_validate(
                {**record.model_dump(), "model": record.model or match.id, "max_model_len": length, "notes": notes}
            )
        )
    return out

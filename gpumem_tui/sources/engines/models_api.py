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


def parse_models(text: str) -> list[ServedModel]:
    """`{"data": [{"id": ..., "max_model_len": ...}]}` -> entries; MetricsError for anything else."""
    try:
        body = json.loads(text)
        entries = body["data"]
        return [ServedModel(str(e["id"]), _int(e.get("max_model_len"))) for e in entries]
    except (ValueError, KeyError, TypeError) as exc:
        raise MetricsError(f"/v1/models is not an OpenAI model list ({type(exc).__name__})") from None


def merge_models(records: list[EngineRecord], served: list[ServedModel]) -> list[EngineRecord]:
    """Fill max_model_len by model id; a record without a model name takes the only served id."""
    by_id = {m.id: m for m in served}
    out = []
    for record in records:
        match = by_id.get(record.model or "") or (served[0] if record.model is None and len(served) == 1 else None)
        if match is None:
            out.append(record)
            continue
        out.append(
            record.model_copy(
                update={
                    "model": record.model or match.id,
                    "max_model_len": record.max_model_len if record.max_model_len is not None else match.max_model_len,
                }
            )
        )
    return out


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None

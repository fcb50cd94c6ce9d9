"""Hugging Face TGI /metrics -> one EngineRecord: pool size from warmup, batch and queue sizes."""

from __future__ import annotations

from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.sources.engines.prometheus import Families
from gpumem_tui.sources.engines.series import SeriesReader, as_int

POOL_TOKENS = "tgi_batch_max_total_tokens"  # set once at warmup
RUNNING = "tgi_batch_current_size"
WAITING = "tgi_queue_size"
BATCH_TOKENS = "tgi_batch_current_max_tokens"

FAMILIES = (POOL_TOKENS, RUNNING, WAITING, BATCH_TOKENS)

NO_USAGE_NOTE = "TGI exports no KV-cache usage gauge; usage is unknown from /metrics"


def normalize(families: Families) -> list[EngineRecord]:
    reader = SeriesReader(families, ())
    key = ()
    record = EngineRecord(
        engine="tgi",
        kv_pool_tokens=as_int(reader.value(POOL_TOKENS, key)),
        requests_running=as_int(reader.value(RUNNING, key)),
        requests_waiting=as_int(reader.value(WAITING, key)),
    )
    return [record.model_copy(update={"notes": [*record.notes, NO_USAGE_NOTE]})]

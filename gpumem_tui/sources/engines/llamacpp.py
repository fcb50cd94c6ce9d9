"""llama.cpp server /metrics -> one EngineRecord (the server has one model and no labels)."""

from __future__ import annotations

from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.sources.engines.prometheus import Families
from gpumem_tui.sources.engines.series import SeriesReader, as_int

KV_USAGE = "llamacpp:kv_cache_usage_ratio"  # removed in llama.cpp PR #13660 (May 2025)
KV_TOKENS = "llamacpp:kv_cache_tokens"  # removed with it
RUNNING = "llamacpp:requests_processing"
WAITING = "llamacpp:requests_deferred"
PROMPT_TOKENS = "llamacpp:prompt_tokens_total"

FAMILIES = (KV_USAGE, KV_TOKENS, RUNNING, WAITING, PROMPT_TOKENS)

REMOVED_NOTE = (
    "llama.cpp no longer exports KV-cache metrics (removed in PR #13660, May 2025); KV usage is unknown from /metrics"
)


def normalize(families: Families) -> list[EngineRecord]:
    reader = SeriesReader(families, ())
    key = ()
    notes = [] if reader.present(KV_USAGE) else [REMOVED_NOTE]
    record = EngineRecord(
        engine="llamacpp",
        kv_usage_fraction=reader.value(KV_USAGE, key),
        requests_running=as_int(reader.value(RUNNING, key)),
        requests_waiting=as_int(reader.value(WAITING, key)),
    )
    return [record.model_copy(update={"notes": [*record.notes, *notes]})]

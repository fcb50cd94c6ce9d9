"""What was measured, as metric families: each GPU's memory, the processes on it that are not an engine
(the largest `top` per GPU and one `other` row for the rest), and each engine's KV cache. The engine's KV
values are those the app judges with (`engine_values.plausible`); a GPU that gives no reading (lost, not
accessible) and an engine that did not answer this refresh publish no series."""

from __future__ import annotations

from gpumem_tui.diagnosis.autoplan import drawn_plans
from gpumem_tui.diagnosis.compare import measured_kv
from gpumem_tui.diagnosis.engine_values import plausible
from gpumem_tui.diagnosis.measured import engine_on, measured_slices, served_records
from gpumem_tui.export.evaluation import Evaluation
from gpumem_tui.export.labels import ENGINE, GPU, GPU_ID, Rows, engine_labels, gpu_labels, split_pod

OTHER = "other"
"""The `pid` of the row that sums the processes beyond the largest `top` on a GPU (a pid is digits)."""
MEMORY = ("total", "used", "free", "reserved")


def gpu_rows(evaluation: Evaluation) -> list[Rows]:
    """`gpumem_gpu_memory_{total,used,free,reserved}_bytes` per GPU, as NVML reports them."""
    rows = {
        field: Rows(
            f"gpumem_gpu_memory_{field}_bytes",
            f"GPU memory {field} as NVML reports it, in bytes"
            + (
                " (driver-reserved memory is not in `used` where the driver reports it apart)"
                if field == "used"
                else ""
            ),
            GPU,
        )
        for field in MEMORY
    }
    sample = evaluation.sample
    if sample is None:
        return list(rows.values())
    for gpu in sample.gpus:
        for field in MEMORY:
            rows[field].add(gpu_labels(sample, gpu), getattr(gpu, f"memory_{field}_bytes"))
    return list(rows.values())


def process_rows(evaluation: Evaluation, top: int) -> Rows:
    """`gpumem_process_memory_used_bytes`: the `top` processes that are not an engine holding the most
    memory on each GPU, then one `pid="other"` row with what the others hold (0 when none is left out)."""
    rows = Rows(
        "gpumem_process_memory_used_bytes",
        f"GPU memory a process that is not an engine holds, in bytes: the largest per GPU, then pid='{OTHER}' "
        "for the rest",
        (*GPU_ID, "pid", "process_name", "namespace", "pod"),
    )
    sample = evaluation.sample
    if sample is None:
        return rows
    by_pid = {(p.gpu_index, p.pid): p for p in sample.processes}
    for gpu in sample.gpus:
        if not gpu.readable:
            continue
        ids = {"Hostname": sample.hostname, "gpu": gpu.index, "UUID": gpu.uuid}
        others = [piece for piece in measured_slices(sample, gpu) if piece.kind == "process"]  # largest first
        for piece in others[:top]:
            assert piece.pid is not None  # a process's slice carries its pid
            process = by_pid[(gpu.index, piece.pid)]
            named = {"pid": process.pid, "process_name": process.name, **split_pod(process.pod)}
            rows.add({**ids, **named}, piece.bytes)
        rows.add({**ids, "pid": OTHER}, sum(piece.bytes for piece in others[top:]))
    return rows


def engine_rows(evaluation: Evaluation) -> list[Rows]:
    """Each endpoint's state, each served model's KV usage and pool in tokens, and its pool in bytes on
    each GPU it is drawn over (tokens x the running model's KV bytes per token, as the TUI counts it)."""
    up = Rows(
        "gpumem_engine_up",
        "1 when the engine endpoint answered this refresh, 0 when stale or down",
        ("Hostname", "endpoint"),
    )
    usage = Rows("gpumem_engine_kv_cache_usage_ratio", "KV cache in use, as the engine reports it (0-1)", ENGINE)
    tokens = Rows("gpumem_engine_kv_cache_pool_tokens", "the engine's KV cache pool, in tokens", ENGINE)
    pool = Rows(
        "gpumem_engine_kv_cache_pool_bytes",
        "the engine's KV cache pool on this GPU, in bytes (its tokens x the model's KV bytes per token per GPU)",
        (*ENGINE, "gpu", "UUID"),
    )
    sample = evaluation.sample
    if sample is None:
        return [up, usage, tokens, pool]
    for endpoint in sample.engines:
        up.add({"Hostname": sample.hostname, "endpoint": endpoint.url}, endpoint.state == "ok")
        for record in map(plausible, endpoint.records if endpoint.state == "ok" else []):
            labels = engine_labels(sample, endpoint, record)
            usage.add(labels, record.kv_usage_fraction)
            tokens.add(labels, record.kv_pool_tokens)
    served = served_records(sample)
    gpus = {gpu.index: gpu for gpu in sample.gpus}
    for index, plan in drawn_plans(evaluation.plans).items():
        on = engine_on(sample, index, served)
        if on is None or on[0].state != "ok" or plan.overlay is None:
            continue
        endpoint, record = on[0], plausible(on[1])
        labels = engine_labels(sample, endpoint, record)
        uuid = gpus[index].uuid if index in gpus else None
        pool.add({**labels, "gpu": index, "UUID": uuid}, measured_kv(plan.overlay, record))
    return [up, usage, tokens, pool]

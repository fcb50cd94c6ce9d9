"""What was judged, as metric families: the plan drawn over each GPU as bands (the overlay the TUI draws),
each plan's facts, and each finding as one series of value 1 while it is raised (the shape of Prometheus'
own `ALERTS`), with its title and what to try beside it (`gpumem_finding_info`, for alerts' annotations). An
engine is named by its labels as vLLM gives them (`labels.ENGINE`)."""

from __future__ import annotations

from collections import defaultdict

from gpumem_tui.diagnosis.autoplan import EnginePlan, drawn_plans, planned
from gpumem_tui.export.evaluation import Evaluation
from gpumem_tui.export.labels import ENGINE, FINDING, InfoRows, Rows
from gpumem_tui.export.workloads import finding_workloads, plan_labels

BANDS = {
    "driver": "driver_reserved",
    "weights": "weights",
    "runtime": "non_torch",
    "activations": "activations",
    "graphs": "cuda_graphs",
    "kv": "kv_cache",
    "reserve": "reserve",
    "spare": "spare",
}
"""The overlay's band kinds (`planner/overlay.py`) and the `band` label each is published under."""


def plan_rows(evaluation: Evaluation) -> list[Rows | InfoRows]:
    """`gpumem_plan_bytes{band}` per GPU, and per plan its facts, its KV pool in tokens and its utilization."""
    bands = Rows(
        "gpumem_plan_bytes",
        "what the plan drawn over this GPU says it should hold, per band, in bytes; the bands sum to the card's total",
        (*ENGINE, "gpu", "UUID", "band"),
    )
    info = InfoRows(
        "gpumem_plan",
        "the facts behind each plan: auto (from what the engine reports) or manual (set by hand)",
        ENGINE,
    )
    tokens = Rows("gpumem_plan_kv_cache_tokens", "the KV cache pool the plan predicts, in tokens", ENGINE)
    utilization = Rows(
        "gpumem_plan_gpu_memory_utilization_ratio", "the gpu_memory_utilization the plan is made with (0-1)", ENGINE
    )
    sample = evaluation.sample
    if sample is None:
        return [bands, info, tokens, utilization]
    uuids = {gpu.index: gpu.uuid for gpu in sample.gpus}
    for index, plan in drawn_plans(evaluation.plans).items():
        assert plan.overlay is not None  # drawn_plans keeps plans with an overlay
        by_band: dict[str, int] = defaultdict(int)
        for band in plan.overlay.bands:
            by_band[BANDS[band.kind]] += band.bytes
        where = {**plan_labels(sample, plan), "gpu": index, "UUID": uuids.get(index)}
        for name, size in by_band.items():
            bands.add({**where, "band": name}, size)
    for plan in evaluation.plans:
        labels = plan_labels(sample, plan)
        settings, p = plan.settings, planned(plan)
        info.add(labels, _facts(plan))
        tokens.add(labels, p.pool_tokens if p else None)
        utilization.add(labels, settings.utilization if settings else None)
    return [bands, info, tokens, utilization]


WORDS_MAX = 256
"""The most characters of a finding's title or advice published as a label: far under the limits a scrape
may set (`label_value_length_limit`), which would refuse the whole scrape."""
UNQUOTED = frozenset({"refresh_failed"})
"""Codes whose words are not published: `refresh_failed`'s title quotes an exception's text, which is not
built from the fields the exporter publishes (docs/export.md)."""


def _facts(plan: EnginePlan) -> dict[str, object]:
    """A plan's facts as `gpumem_plan_info` labels: vLLM's settings, or SGLang's (`sglang_version` and
    `mem_fraction_static` in place of `vllm_version`)."""
    facts: dict[str, object] = {"source": plan.label, "set_by": plan.source, "catalog_model": plan.model}
    settings, sg, p = plan.settings, plan.sglang_settings, planned(plan)
    if settings is not None:
        facts |= {
            "quantization": settings.quantization,
            "kv_cache_dtype": settings.kv_cache_dtype,
            "tensor_parallel_size": settings.tp,
            "pipeline_parallel_size": settings.pp,
            "max_model_len": p.context_len if p else settings.max_model_len,
            "vllm_version": settings.version,
        }
    elif sg is not None and plan.sglang is not None:
        facts |= {
            "quantization": sg.quantization,
            "kv_cache_dtype": sg.kv_cache_dtype,
            "tensor_parallel_size": sg.tp,
            "pipeline_parallel_size": sg.pp,
            "max_model_len": plan.sglang.context_len,
            "sglang_version": sg.version,
            "mem_fraction_static": plan.sglang.mem_fraction_static,
        }
    return facts


def finding_rows(evaluation: Evaluation) -> list[Rows | InfoRows]:
    """`gpumem_finding_active`: 1 per finding raised now, named as `check --json` names it; and
    `gpumem_finding_info`: the same labels with its `title` and `try_this`, as `check` words them."""
    rows = Rows(
        "gpumem_finding_active",
        "1 while the finding is raised: its code and severity, the GPU, process and engine it names",
        FINDING,
    )
    words = InfoRows(
        "gpumem_finding",
        "a finding raised now, in words: its title and what to try, as gpumem-tui check says them",
        FINDING,
    )
    chosen = evaluation.workloads or finding_workloads(evaluation.sample, evaluation.plans, evaluation.findings)
    for finding in evaluation.findings:
        for workload in chosen.get(finding.key, ({},)):  # one series per engine on a GPU that several share
            labels = {
                **workload,
                "Hostname": evaluation.hostname,
                "code": finding.code,
                "severity": finding.severity,
                "gpu": finding.gpu_index,
                "pid": finding.pid,
            }
            rows.add(labels, 1)
            if finding.code not in UNQUOTED:
                words.add(labels, {"title": _cut(finding.title), "try_this": _cut(finding.try_this)})
    return [rows, words]


def _cut(text: str) -> str:
    """At most WORDS_MAX characters, the last an ellipsis where it was cut."""
    return text if len(text) <= WORDS_MAX else text[: WORDS_MAX - 1] + "…"

"""`gpumem-tui log FILE --compare` on an SGLang log: its settings from `ServerArgs(...)`, its release from
its wording, its card from its numbers; every memory line predicted by SGLang's rules (planner/sglang)."""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from gpumem_tui.catalog import Catalog, LookupFailed, ModelSpec, load_catalog
from gpumem_tui.catalog.schema import GpuSpec
from gpumem_tui.cli.errors import UsageError
from gpumem_tui.cli.output import console, print_json, say, table
from gpumem_tui.planner.dtypes import PlanInputError
from gpumem_tui.planner.sglang import SglangSettings, predict
from gpumem_tui.planner.sglang.against_log import Predictions, SglangVersus, versus
from gpumem_tui.planner.sglang.cell import attention_tp, cell
from gpumem_tui.planner.sglang.from_log import Release, card_for, release_of
from gpumem_tui.planner.sglang.memory import weights_on_rank
from gpumem_tui.planner.sglang.versions import Rules, parse_version
from gpumem_tui.planner.vllm.from_log import quantization_method
from gpumem_tui.planner.vllm.loaded import dtype_bytes
from gpumem_tui.planner.vllm.outcome import Outcome, outcome
from gpumem_tui.sources.engines.startup_log import SglangArgs, StartupLog
from gpumem_tui.units import GIB, gib


def run_sglang_compare(args: argparse.Namespace, parsed: StartupLog, text: str, config: ModelSpec | None) -> None:
    catalog = load_catalog(args.catalog)
    release = release_of(text.splitlines(), args.sglang_version)
    settings, assumed = _settings(args, parsed, catalog, release.version, config)
    try:
        p = _predictions(settings, derived=parsed.free_before_weights_gib is None)
    except PlanInputError as exc:
        raise UsageError(f"{args.file}: {exc}") from None
    rows = versus(p, parsed.model_dump())
    model = settings.model.id
    ending = outcome(p.chained, parsed.model_dump(), model)
    notes = [release.note] if release.note else []
    if args.json:
        print_json(
            {
                "log": parsed.model_dump(mode="json"),
                "engine": p.chained.engine_json(),
                "notes": notes,
                "release": {"version": release.version, "source": release.source, "family": release.family},
                "assumed": assumed,
                "outcome": ending.model_dump(),
                "compare": [row.model_dump() for row in rows],
            }
        )
        return
    _print(model, release, assumed + p.chained.assumed, rows, ending, notes + p.chained.warnings)


def _print(
    model: str, release: Release, assumed: list[str], rows: list[SglangVersus], ending: Outcome, notes: list[str]
) -> None:
    out = console()
    say(out, f"{model}: SGLang {release.version}, predicted from the settings the log states", style="bold")
    for line in assumed:
        say(out, f"  assumed: {line}", style="yellow")
    cells = [
        [
            row.label,
            _num(row.predicted),
            _num(row.stated),
            "-" if row.error is None else f"{row.error:+.2%}",
            "settings" if not row.uses else "log: " + " + ".join(USES[k] for k in row.uses),
        ]
        for row in rows
    ]
    out.print(table(None, ["", "predicted", "log", "error", "from"], cells, right={1, 2, 3}))
    say(out, "  (SGLang's log prints GB for sizes divided by 2^30: the GiB shown here)")
    style = {True: "green", False: "red", None: "yellow"}[ending.agree]
    label = {True: "agrees", False: "DISAGREES", None: "unchecked"}[ending.agree]
    say(out, f"  outcome {label}: {ending.says}", style=style)
    shown = set(ending.predicted_failures)
    for note in [n for n in notes if n not in shown]:
        say(out, f"  ! {note}", style="yellow")


USES = {"free_before_weights_gib": "free before weights", "free_after_weights_gib": "free after weights"}
"""How the `from` column names the log's measurements a row used."""


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:,.2f}"


def _predictions(settings: SglangSettings, derived: bool) -> Predictions:
    """`derived`: the free memory before the weights was rebuilt from after + mem usage (no begin line)."""
    alone = settings.model_copy(update={"measured_before_bytes": None, "measured_after_bytes": None})
    before = settings.model_copy(update={"measured_after_bytes": None})
    return Predictions(
        alone=predict(alone),
        before=predict(before),
        chained=predict(settings),
        uses_before=settings.measured_before_bytes is not None,
        uses_after=settings.measured_after_bytes is not None,
        before_derived=derived and settings.measured_before_bytes is not None,
    )


def _measured(log: StartupLog) -> tuple[int | None, int | None, str | None]:
    """Free memory before and after the weights in bytes, and where `before` came from when derived:
    SGLang prints `mem usage` as before - after."""
    after = None if log.free_after_weights_gib is None else round(log.free_after_weights_gib * GIB)
    if log.free_before_weights_gib is not None:
        return round(log.free_before_weights_gib * GIB), after, None
    if after is not None and log.weights_gib is not None:
        derived = (
            "free memory before the weights taken as Load weight end's avail mem + mem usage (the log has no "
            "Load weight begin line)"
        )
        return after + round(log.weights_gib * GIB), after, derived
    return None, after, None


def _model(
    args: argparse.Namespace, parsed: StartupLog, catalog: Catalog, config: ModelSpec | None
) -> tuple[ModelSpec, str | None]:
    name = args.model or (parsed.server_args.model_path if parsed.server_args else None) or parsed.model
    if config is not None:
        return config, None
    if not name:
        raise UsageError(f"{args.file}: the log does not name the model; give it with --model ID or --config PATH")
    try:
        found = catalog.match_model(name)
    except LookupFailed as exc:
        raise UsageError(
            f"{exc}; for a model the catalog does not hold, give its config.json with --config PATH"
        ) from None
    return found.spec, found.quantization


def _settings(
    args: argparse.Namespace, parsed: StartupLog, catalog: Catalog, version: str, config: ModelSpec | None
) -> tuple[SglangSettings, list[str]]:
    """SglangSettings from the log's ServerArgs and lines; --model, --config, --gpu, --tp and
    --mem-fraction-static give what the log does not state. Returns the notes of what was assumed."""
    spec, implied = _model(args, parsed, catalog, config)
    sa = parsed.server_args or SglangArgs(complete=False)
    before, after, derived = _measured(parsed)
    assumed = [derived] if derived else []
    if parsed.server_args is not None and not sa.complete:
        assumed.append("the ServerArgs line is cut short: only the settings before the cut are read")
    tp = args.tp or sa.tp_size or parsed.tensor_parallel_size
    if tp is None:
        assumed.append("tp_size 1 (the log does not state it) — pass --tp")
    fraction = args.mem_fraction_static or sa.mem_fraction_static or parsed.gpu_memory_utilization
    values = dict(
        model=spec,
        version=version,
        tp=tp or 1,
        pp=sa.pp_size or 1,
        dp=sa.dp_size or 1,
        enable_dp_attention=bool(sa.enable_dp_attention),
        dtype=(sa.dtype or parsed.dtype or "auto").removeprefix("torch."),
        quantization=quantization_method(sa.quantization or parsed.quantization, implied),
        kv_cache_dtype=sa.kv_cache_dtype or parsed.kv_cache_dtype or "auto",
        mem_fraction_static=fraction,
        context_length=parsed.max_model_len or sa.context_length,
        chunked_prefill_size=sa.chunked_prefill_size,
        chunk_stated=sa.chunked_prefill_size is not None,
        max_prefill_tokens=sa.max_prefill_tokens or 16384,
        cuda_graph_max_bs=sa.cuda_graph_max_bs,
        disable_cuda_graph=bool(sa.disable_cuda_graph),
        page_size=sa.page_size or 1,
        max_total_tokens=sa.max_total_tokens,
        max_running_requests=sa.max_running_requests,
        speculative_algorithm=sa.speculative_algorithm,
        measured_before_bytes=before,
        measured_after_bytes=after,
    )
    try:
        gpu, note = _gpu(args, parsed, catalog, values)
        settings = SglangSettings(gpu=gpu, **values)
    except (ValidationError, PlanInputError) as exc:
        first = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise UsageError(f"{args.file}: the log's settings cannot be sized: {first}") from None
    assumed += [note] if note else []
    if fraction is None:
        assumed.append(
            "mem_fraction_static: the release's default (the log does not state it) — pass --mem-fraction-static"
        )
    return settings, assumed


def _gpu(args: argparse.Namespace, parsed: StartupLog, catalog: Catalog, values: dict) -> tuple[GpuSpec, str | None]:
    """--gpu, else the smallest catalog card that holds what the log's numbers show was on it."""
    if args.gpu:
        return catalog.gpu(args.gpu), None
    least = _least_bytes(parsed, values)
    if least is None:
        raise UsageError(f"{args.file}: the log names no GPU and states no free memory; name the GPU with --gpu KEY")
    card = card_for(catalog, least)
    if card is None:
        raise UsageError(
            f"{args.file}: the log names no GPU and shows {gib(least)} on one, more than any catalog card holds; "
            "name the GPU with --gpu KEY"
        )
    return card, (
        f"GPU {card.key} ({gib(card.capacity_bytes)}): the log names none; the smallest catalog card that holds "
        f"the {gib(least)} its numbers show on one GPU — pass --gpu"
    )


def _least_bytes(parsed: StartupLog, values: dict) -> int | None:
    """What one GPU held at least: free before the weights; else free after plus the weights (the log's, or
    the predicted ones); else the pool (its GiB, or its tokens x the cell), what it left, and the weights."""
    before, after = values["measured_before_bytes"], values["measured_after_bytes"]
    if before is not None:
        return before
    spec, tp = values["model"], values["tp"]
    weights = weights_on_rank(spec, dtype_bytes(values["dtype"]), values["quantization"], tp, 0, values["pp"])
    if after is not None:
        return after + weights
    rules = Rules(parse_version(values["version"]))
    one = cell(spec, values["kv_cache_dtype"], rules, attention_tp(tp, values["dp"], values["enable_dp_attention"]))
    pool = round(parsed.kv_cache_gib * GIB) if parsed.kv_cache_gib else (parsed.kv_cache_tokens or 0) * one.bytes
    if not pool:
        return None
    return pool + round((parsed.free_after_pool_gib or 0) * GIB) + weights

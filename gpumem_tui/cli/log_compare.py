"""`gpumem-tui log FILE --compare`: build the plan from the settings the log states, predict, compare."""

from __future__ import annotations

import argparse

from gpumem_tui.catalog import LookupFailed, load_catalog
from gpumem_tui.catalog.hfconfig import find_config, load_config, model_from_config, model_id_for
from gpumem_tui.cli.errors import UsageError
from gpumem_tui.cli.output import console, print_json, say, table
from gpumem_tui.planner.vllm import DEFAULT_VERSION, predict
from gpumem_tui.planner.vllm.stated import Stated, release_of, settings_from
from gpumem_tui.planner.vllm.versus import versus
from gpumem_tui.sources.engines.startup_log import StartupLog


def run_compare(args: argparse.Namespace, parsed: StartupLog, text: str) -> int:
    if parsed.engine != "vllm":
        raise UsageError(f"{args.file}: --compare predicts vLLM startups; this log is {parsed.engine or 'unknown'}")
    catalog = load_catalog(args.catalog)
    version = args.vllm_version or parsed.vllm_version or release_of(None, text.splitlines())
    notes = [] if version else [f"the log does not name its vLLM version: predicting {DEFAULT_VERSION}"]
    stated = Stated(**{k: getattr(parsed, k) for k in Stated.model_fields if hasattr(parsed, k)})
    if args.model:
        stated = stated.model_copy(update={"model": args.model})
    spec = None
    if args.config:
        path = find_config(args.config)
        config = load_config(path)
        spec, _warnings = model_from_config(config, model_id_for(path, config))
    if not stated.model and spec is None:
        raise UsageError(f"{args.file}: the log does not name the model; give it with --model ID or --config PATH")
    gpu = catalog.gpu(args.gpu) if args.gpu else None
    if gpu is None and parsed.total_gpu_memory_gib is None:
        raise UsageError(f"{args.file}: the log does not state the GPU's total memory; name the GPU with --gpu KEY")
    try:
        prediction = predict(settings_from(catalog, stated, version or DEFAULT_VERSION, gpu, spec))
    except LookupFailed as exc:
        hint = "for a model the catalog does not hold, give its config.json with --config PATH"
        raise UsageError(f"{exc}; {hint}") from None
    rows = versus(prediction, parsed.model_dump())
    if args.json:
        print_json({"log": parsed.model_dump(mode="json"), "engine": prediction.engine_json(), "notes": notes,
                    "compare": [row.model_dump() for row in rows]})
        return 0
    out = console()
    say(out, f"{parsed.model}: vLLM {version or DEFAULT_VERSION}, predicted from the settings the "
                   "log states", style="bold")
    cells = [[row.label, _num(row.predicted), _num(row.stated), "-" if row.error is None else f"{row.error:+.2%}"]
             for row in rows]
    out.print(table(None, ["", "predicted", "log", "error"], cells, right={1, 2, 3}))
    for note in notes + prediction.warnings:
        say(out, f"  ! {note}", style="yellow")
    return 0


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 1000 else f"{value:,.2f}"

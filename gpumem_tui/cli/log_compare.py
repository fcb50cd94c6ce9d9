"""`gpumem-tui log FILE --compare`: build the plan from the settings the log states, predict, compare."""

from __future__ import annotations

import argparse

from gpumem_tui.catalog import Catalog, LookupFailed, ModelSpec, load_catalog
from gpumem_tui.catalog.hfconfig import read_model_config
from gpumem_tui.cli.errors import UsageError
from gpumem_tui.cli.output import console, print_json, say, table
from gpumem_tui.planner.vllm import EngineSettings, predict
from gpumem_tui.planner.vllm.against_log import versus
from gpumem_tui.planner.vllm.from_log import Stated, assumed, release_of, settings_from
from gpumem_tui.planner.vllm.outcome import outcome
from gpumem_tui.sources.engines.startup_log import StartupLog


def run_compare(args: argparse.Namespace, parsed: StartupLog, text: str) -> None:
    """Predicted vs stated, printed; the exit status is the log's own (log_cmd.py)."""
    _engine_options(args, parsed)
    if parsed.engine == "sglang":
        from gpumem_tui.cli.log_sglang import run_sglang_compare

        run_sglang_compare(args, parsed, text, _config_model(args.config) if args.config else None)
        return
    catalog = load_catalog(args.catalog)
    release = release_of(parsed.vllm_version, text.splitlines(), args.vllm_version)
    stated, settings = _settings(args, parsed, catalog, release["version"])
    prediction, guessed = predict(settings), assumed(stated, settings)
    model = settings.model.id
    rows = versus(prediction, parsed.model_dump())
    ending = outcome(prediction, parsed.model_dump(), model)
    notes = [release["note"]] if release["note"] else []
    if args.json:
        print_json(
            {
                "log": parsed.model_dump(mode="json"),
                "engine": prediction.engine_json(),
                "notes": notes,
                "release": {k: release[k] for k in ("version", "source", "family")},
                "assumed": guessed,
                "outcome": ending.model_dump(),
                "compare": [row.model_dump() for row in rows],
            }
        )
        return
    out = console()
    also = " and the assumed ones below" if guessed else ""
    say(out, f"{model}: vLLM {release['version']}, predicted from the settings the log states{also}", style="bold")
    for line in guessed + prediction.assumed:
        say(out, f"  assumed: {line}", style="yellow")
    for line in prediction.term_lines():
        say(out, f"  term: {line}")
    cells = [
        [row.label, _num(row.predicted), _num(row.stated), "-" if row.error is None else f"{row.error:+.2%}"]
        for row in rows
    ]
    out.print(table(None, ["", "predicted", "log", "error"], cells, right={1, 2, 3}))
    style = {True: "green", False: "red", None: "yellow"}[ending.agree]
    label = {True: "agrees", False: "DISAGREES", None: "unchecked"}[ending.agree]
    say(out, f"  outcome {label}: {ending.says}", style=style)
    shown = set(ending.predicted_failures)
    for note in notes + [w for w in prediction.warnings if w not in shown]:
        say(out, f"  ! {note}", style="yellow")


SGLANG_ONLY = (("sglang_version", "--sglang-version"), ("tp", "--tp"), ("mem_fraction_static", "--mem-fraction-static"))


def _engine_options(args: argparse.Namespace, parsed: StartupLog) -> None:
    """The log's engine decides the rules; an option of the other engine's is refused, not ignored."""
    if parsed.engine not in ("vllm", "sglang"):
        raise UsageError(f"{args.file}: --compare predicts vLLM and SGLang startups; this log shows no engine")
    given = [flag for name, flag in SGLANG_ONLY if getattr(args, name, None)]
    if parsed.engine == "vllm" and given:
        raise UsageError(f"{args.file}: {given[0]} is for SGLang logs; this log is vLLM's")
    if parsed.engine == "sglang" and args.vllm_version:
        raise UsageError(f"{args.file}: --vllm-version is for vLLM logs; this log is SGLang's (use --sglang-version)")


def _settings(
    args: argparse.Namespace, parsed: StartupLog, catalog: Catalog, version: str
) -> tuple[Stated, EngineSettings]:
    """The settings the log states, and vLLM's as they follow from them; --model, --max-model-len, --config
    and --gpu give what the log does not state."""
    stated = Stated(**{k: getattr(parsed, k) for k in Stated.model_fields if hasattr(parsed, k)})
    if args.model:
        stated = stated.model_copy(update={"model": args.model})
    if args.max_model_len:
        stated = stated.model_copy(update={"max_model_len": args.max_model_len})
    spec = _config_model(args.config) if args.config else None
    if not stated.model and spec is None:
        raise UsageError(f"{args.file}: the log does not name the model; give it with --model ID or --config PATH")
    gpu = catalog.gpu(args.gpu) if args.gpu else None
    if gpu is None and parsed.total_gpu_memory_gib is None:
        raise UsageError(f"{args.file}: the log does not state the GPU's total memory; name the GPU with --gpu KEY")
    try:
        return stated, settings_from(catalog, stated, version, gpu, spec)
    except LookupFailed as exc:
        hint = "for a model the catalog does not hold, give its config.json with --config PATH"
        raise UsageError(f"{exc}; {hint}") from None


def _config_model(where: str) -> ModelSpec:
    return read_model_config(where)[0]


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 1000 else f"{value:,.2f}"

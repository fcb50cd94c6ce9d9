"""The plan a node is judged against in `check`, `export` and the TUI: one given by hand with the plan
options, else a --demo scenario's own, else none (one is made from what runs); and the judge that holds it."""

from __future__ import annotations

import argparse

from gpumem_tui.catalog import Catalog, load_catalog
from gpumem_tui.cli.errors import UsageError
from gpumem_tui.demo import load_scenario
from gpumem_tui.demo.plan import scenario_plan
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.diagnosis.overlays import ManualPlan


def manual_plan(args: argparse.Namespace, catalog: Catalog) -> ManualPlan | None:
    """The plan the plan options describe (--model or --config and what goes with it), or None."""
    if args.model is None and args.config is None:
        for flag in ("weights", "context", "gpus"):
            if getattr(args, flag) is not None:
                given = getattr(args, f"_{flag}_given_as", (f"--{flag}",))[0]
                raise UsageError(f"{given} describes a plan: give --model too")
        return None
    from gpumem_tui.cli.plan_resolve import Resolved  # config.json and safetensors readers: for a plan given

    model = Resolved.model_of(args, catalog)
    return ManualPlan.with_weights(
        catalog,
        model,
        args.weights,
        kv_cache_dtype=args.kv_dtype,
        max_model_len=args.context,
        users=args.users,
        utilization=args.utilization,
        tp=args.gpus,
        version=args.vllm_version,
    )


def build_judge(args: argparse.Namespace) -> Judge:
    """The judge of `export` and the TUI: the catalog, and the plan given by hand, else a --demo scenario's."""
    catalog = load_catalog(args.catalog)
    plan = scenario_plan(load_scenario(args.demo), catalog) if args.demo is not None else None
    plan = manual_plan(args, catalog) or plan
    return Judge(catalog, plan)

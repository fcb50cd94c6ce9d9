"""`gpumem-tui check`: findings for this node, a simulated node or a recording; the exit code says the worst.

Exit 0 when nothing is above info, 1 for a warning, 2 for a critical finding, 3 when there is no data
source. Bad input is also exit 2, with one line on stderr and nothing on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from gpumem_tui.catalog import Catalog, load_catalog
from gpumem_tui.cli import check_view
from gpumem_tui.cli.check_sources import Checked, from_demo, from_live, from_replay
from gpumem_tui.cli.errors import UsageError
from gpumem_tui.cli.output import console, print_json
from gpumem_tui.cli.planargs import add_plan_options, manual_plan, seconds
from gpumem_tui.findings import SEVERITY_ORDER, Thresholds, worst
from gpumem_tui.overlays import ManualPlan
from gpumem_tui.sources.mock import scenario_names

SCHEMA = "gpumem-tui.check/1"


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("check", help="findings: plan vs actual, in plain words (exit 0 ok, 1 warning, 2 critical)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--demo", metavar="SCENARIO", help=f"a simulated node: {', '.join(scenario_names())}")
    source.add_argument(
        "--replay", metavar="FILE", help="a recording: findings at --at (default: the end), plus OOM forensics"
    )
    parser.add_argument("--at", type=seconds(), metavar="SECONDS", help="seconds into the scenario or the recording")
    parser.add_argument("--seed", type=int, help="seed of the simulated node (default: the scenario's)")
    parser.add_argument("--endpoint", action="append", default=[], metavar="URL", help="an engine endpoint (live)")
    parser.add_argument("--json", action="store_true", help="print JSON (schema: docs/check-json.md)")
    add_plan_options(parser.add_argument_group("a plan to check against (default: one made from what is running)"),
                     "check against a plan")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.endpoint and (args.demo is not None or args.replay is not None):
        raise UsageError("--endpoint is for a live check; a demo or a recording brings its own engines")
    if args.at is not None and args.demo is None and args.replay is None:
        raise UsageError("--at needs --demo or --replay")
    catalog = load_catalog(args.catalog)
    checked = _check(args, catalog, manual_plan(args, catalog), Thresholds())
    for warning in checked.warnings:
        print(f"gpumem-tui: warning: {warning}", file=sys.stderr)
    if args.json:
        print_json(to_json(checked))
    else:
        check_view.render(checked, console())
    return exit_code(checked)


def _check(args: argparse.Namespace, catalog: Catalog, manual: ManualPlan | None, thresholds: Thresholds) -> Checked:
    if args.demo is not None:
        return asyncio.run(from_demo(args.demo, args.at, args.seed, catalog, manual, thresholds))
    if args.replay:
        return from_replay(args.replay, args.at, catalog, manual, thresholds)
    return asyncio.run(from_live(args.endpoint, catalog, manual, thresholds))


def exit_code(checked: Checked) -> int:
    """0 nothing above info, 1 a warning, 2 a critical finding."""
    return max(SEVERITY_ORDER[worst(checked.findings) or "info"], 0)


def to_json(checked: Checked) -> dict:
    return {
        "schema": SCHEMA,
        "source": checked.source,
        "where": checked.where,
        "timestamp": checked.sample.timestamp,
        "worst": worst(checked.findings),
        "findings": [finding.model_dump(mode="json") for finding in checked.findings],
        "plans": [check_view.plan_json(plan) for plan in checked.plans],
        "forensics": checked.forensics.model_dump(mode="json") if checked.forensics else None,
    }

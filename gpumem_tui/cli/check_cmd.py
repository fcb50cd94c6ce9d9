"""`gpumem-tui check`: findings for this node, a simulated node or a recording, as a monitoring plugin.

It follows the Nagios plugin guidelines: exit 0 OK (nothing above info), 1 WARNING, 2 CRITICAL, 3 UNKNOWN
for every failure (bad input, no data source, an error inside `check`: one line on stderr, nothing on
stdout). Otherwise the first line on stdout is `STATUS - summary | perfdata` (check_status.py),
then where it looked and the findings; --verbose adds the plans and, on a recording, a simulated node or a node
in Prometheus (over its --history, from range queries), the forensics. The options are check_opts.py's.
"""

from __future__ import annotations

import argparse
import sys

from gpumem_tui.catalog import Catalog, load_catalog
from gpumem_tui.cli.check_sources import Checked, from_demo, from_replay
from gpumem_tui.cli.check_status import STATUS, exit_code, headline, status_line
from gpumem_tui.cli.check_text import on_pipe
from gpumem_tui.cli.errors import UsageError, endpoints_need_live, warn
from gpumem_tui.cli.node_plan import manual_plan
from gpumem_tui.cli.output import console, print_json, reader_may_leave
from gpumem_tui.cli.planargs import seconds
from gpumem_tui.diagnosis.autoplan import EnginePlan, planned, split_of
from gpumem_tui.diagnosis.findings import Thresholds, worst
from gpumem_tui.diagnosis.overlays import ManualPlan

SCHEMA = "gpumem-tui.check/1"


def run(args: argparse.Namespace) -> int:
    endpoints_need_live(args, "check")
    if (args.prometheus is None) != (args.node is None):
        raise UsageError("check: --prometheus URL and --node NAME go together")
    if args.prometheus is not None and (args.endpoint or args.seed is not None):
        raise UsageError("check: --endpoint and --seed are not for a node read from Prometheus")
    if args.node_history is not None and (args.prometheus is None or not args.verbose):
        raise UsageError("check: --history is how far back -v's forensics reads a node in Prometheus: give -v too")
    if args.at is not None and args.demo is None and args.replay is None and args.prometheus is None:
        raise UsageError("--at needs --demo, --replay or --prometheus")
    catalog = load_catalog(args.catalog)
    checked = _check(args, catalog, manual_plan(args, catalog), Thresholds())
    for warning in checked.warnings:
        warn(warning)
    code = exit_code(checked.findings)
    with reader_may_leave():
        if args.json:
            print_json(to_json(checked))
        else:
            _print_text(checked, args.verbose)
    return code


def _print_text(checked: Checked, verbose: bool) -> None:
    """The text: written as it is on a pipe where rich would add nothing (check_text.on_pipe), else by rich."""
    plain = None if verbose else on_pipe(checked)
    if plain is not None:
        sys.stdout.write(plain)
        sys.stdout.flush()
        return
    from gpumem_tui.cli import check_view  # rich: for a terminal, --verbose, or a line it wraps

    out = console()
    out.file.write(check_view.rendered(checked, out, verbose))
    out.file.flush()


def _check(args: argparse.Namespace, catalog: Catalog, manual: ManualPlan | None, thresholds: Thresholds) -> Checked:
    if args.prometheus is not None:
        # the fleet's reader and judge, and an event loop, imported for a node in Prometheus only
        import asyncio

        from gpumem_tui.cli.check_prometheus import from_prometheus
        from gpumem_tui.cli.prometheus_source import node_source
        from gpumem_tui.sources.prometheus.node_history import SPAN_S
        from gpumem_tui.sources.prometheus.node_queries import NodeQueries

        connection, queries, at = node_source(args, "check")
        span = (SPAN_S if args.node_history is None else args.node_history) if args.verbose else None
        node = NodeQueries(args.node, queries.matchers, queries.labels)
        return asyncio.run(from_prometheus(connection, node, at, args.query_timeout, catalog, manual, thresholds, span))
    offset = None if args.at is None else _offset(args.at)
    if args.demo is not None:
        return from_demo(args.demo, offset, args.seed, catalog, manual, thresholds)
    if args.replay:
        return from_replay(args.replay, offset, catalog, manual, thresholds)
    import asyncio  # this node's engines are scraped on an event loop; a demo or a recording needs none

    from gpumem_tui.cli.check_live import from_live  # NVML's binding and the host, for this node only

    return asyncio.run(from_live(args.endpoint, catalog, manual, thresholds))


def _offset(text: str) -> float:
    try:
        return seconds()(text)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"check: argument --at: {exc}") from None


def to_json(checked: Checked) -> dict:
    code, first = exit_code(checked.findings), headline(checked.findings)
    return {
        "schema": SCHEMA,
        "source": checked.source,
        "where": checked.where,
        "timestamp": checked.sample.timestamp,
        "worst": worst(checked.findings),
        "status": STATUS[code],
        "exit_code": code,
        "status_line": status_line(checked.findings, checked.plans, checked.sample),
        "headline": first.model_dump(mode="json") if first else None,
        "findings": [finding.model_dump(mode="json") for finding in checked.findings],
        "plans": [plan_json(plan) for plan in checked.plans],
        "forensics": checked.forensics.model_dump(mode="json") if checked.forensics else None,
        "fleet_differs": None
        if checked.differences is None
        else [
            {"code": d.code, "severity": d.severity, "only_in": d.only_in, "why": d.why} for d in checked.differences
        ],
    }


def plan_json(plan: EnginePlan) -> dict:
    """The documented `plans` entry of `check --json`; a plan sized by SGLang's rules adds `sglang`."""
    p = planned(plan)
    data = {
        "endpoint": plan.endpoint,
        "model": plan.model,
        "label": plan.label,
        "gpu_indices": plan.gpu_indices,
        "users": plan.users,
        "found": plan.found,
        "assumed": plan.assumed,
        "missing": plan.missing,
        "weights_bytes": p.weights_bytes if p else None,
        "kv_cache_bytes": p.kv_cache_bytes if p else None,
        "kv_cache_tokens": p.pool_tokens if p else None,
        "max_model_len": p.context_len if p else None,
        "planned_bytes": planned_bytes(plan),
        "terms": plan.prediction.terms if plan.prediction else {},
        "engine_assumed": p.assumed if p else [],
    }
    if plan.sglang is not None:
        data["sglang"] = plan.sglang.engine_json()
    return data


def planned_bytes(plan: EnginePlan) -> int | None:
    """The GPU memory the plan expects the engine to hold over all its GPUs (its bands on one GPU times its
    split): what `fleet check` calls an engine's `planned_bytes`."""
    split = split_of(plan)
    if plan.overlay is None or split is None:
        return None
    return plan.overlay.engine_bytes * split

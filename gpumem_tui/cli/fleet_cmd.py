"""`gpumem-tui fleet snapshot|check|rules --prometheus URL`: the fleet as Prometheus holds it (docs/fleet-json.md).

`snapshot` prints one fleet sample: nodes, GPUs, engines and how each was joined, coverage and data age.
`rules` prints the recording rules that let the server precompute the overview's per-node figures.
`check` judges it (diagnosis/fleet.py) and exits as a monitoring plugin: 0 OK, 1 WARNING, 2 CRITICAL,
3 UNKNOWN (no data source: the server cannot be reached, refuses the credentials or runs out of time; bad
input; or, with its report, a server that holds no node and no engine). `snapshot` exits 2 on bad input and 3
when no source answers. Every failure is one line on stderr. The options are fleet_opts.py's; the text,
fleet_text.py's."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from gpumem_tui.catalog import CatalogError, load_catalog
from gpumem_tui.cli.check_status import STATUS
from gpumem_tui.cli.errors import NoSourceError, UsageError, plugin_failed, warn
from gpumem_tui.cli.fleet_text import print_check, print_snapshot
from gpumem_tui.cli.output import print_json, reader_may_leave
from gpumem_tui.diagnosis.findings import Thresholds, worst
from gpumem_tui.diagnosis.fleet.judge import judge_fleet, verdict
from gpumem_tui.diagnosis.fleet.plans import AliasError, PlansKept, model_memory, parse_aliases, plan_fleet
from gpumem_tui.diagnosis.fleet.records import FleetFinding
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.records import FleetSample

if TYPE_CHECKING:  # a source's reader and a history are imported where they are read: --demo needs neither
    from gpumem_tui.sources.prometheus.client import Connection
    from gpumem_tui.sources.prometheus.history import FleetHistory

SNAPSHOT_SCHEMA = "gpumem-tui.fleet-snapshot/1"
CHECK_SCHEMA = "gpumem-tui.fleet-check/1"


def _read(connection: Connection, queries: Queries, at: float, timeout_s: float) -> FleetSample:
    import asyncio

    from gpumem_tui.diagnosis.fleet.reading import FleetRules
    from gpumem_tui.sources.prometheus.client import PrometheusClient, PrometheusError
    from gpumem_tui.sources.prometheus.reader import FleetReader

    read: list[FleetSample] = []

    async def run() -> None:
        # the sample is handed over aside: on the main thread Python 3.11's asyncio.run formats its task,
        # result included, on the way out (0.16 s of a 1,000-node sample's repr)
        async with PrometheusClient(connection, query_timeout_s=timeout_s) as client:
            read.append(await FleetReader(queries, FleetRules()).read(client, at))

    try:
        asyncio.run(run())
    except PrometheusError as exc:
        raise NoSourceError(exc.said()) from None
    return read[0]


def demo_alone(args: argparse.Namespace) -> None:
    """--demo is the simulated fleet at its own moment: the options of a real source would be ignored."""
    given = [
        option
        for option, value in (
            ("--at", args.at),
            ("--selector", args.selector),
            ("--header", args.header),
            ("--bearer-token-file", args.bearer_token_file),
            ("--username", args.username),
            ("--password-file", args.password_file),
            ("--ca-file", args.ca_file),
            ("--overview", args.overview),
            ("--node-label", args.node_label != "auto"),
            ("--pod-label", args.pod_label != "auto"),
            ("--full", args.full),
        )
        if value
    ]
    if given:
        raise UsageError(
            f"fleet: {', '.join(given)} {'is' if len(given) == 1 else 'are'} for --prometheus; "
            "--demo is a simulated fleet at its own moment"
        )


def inputs(args: argparse.Namespace, overview: bool = True) -> tuple[Connection, Queries, float]:
    """The source options read: the overview (the default of check and the fleet screen) unless --full,
    the full read (snapshot's default) unless --overview."""
    from gpumem_tui.cli.prometheus_source import source_inputs

    overview = args.overview or (overview and not args.full)
    return source_inputs(args, Thresholds().headroom_warning_fraction if overview else None)


def planner(args: argparse.Namespace) -> Callable[[FleetSample], FleetSample]:
    """What plans each engine of a sample from the catalog (--catalog, --model-alias read now: bad ones are
    bad input)."""
    try:
        catalog = load_catalog(args.catalog)
        aliases = parse_aliases(args.model_alias, catalog)
    except (CatalogError, AliasError) as exc:
        raise UsageError(f"fleet: {exc}") from None
    kept = PlansKept()  # the fleet screen plans sample after sample: what is the same is planned once
    return lambda sample: plan_fleet(sample, catalog, aliases, kept)


def no_screen_options(args: argparse.Namespace, action: str) -> None:
    """`--interval` and `--history` before an action are the fleet screen's: refused, never ignored."""
    for option, value in (("--interval", args.screen_interval), ("--history", args.screen_history)):
        if value is not None:
            raise UsageError(
                f"fleet {action}: {option} before the action is the fleet screen's; the action would not use it"
            )


def source_given(args: argparse.Namespace, action: str) -> None:
    """One source, --prometheus or --demo, before the action or after it; none of the screen's options."""
    no_screen_options(args, action)
    if args.fleet_demo and args.prometheus is not None:
        raise UsageError(f"fleet {action}: --prometheus and --demo name two sources; give one")
    if not args.fleet_demo and args.prometheus is None:
        raise UsageError(f"fleet {action}: give --prometheus URL or --demo")


def sample_from(args: argparse.Namespace, overview: bool) -> FleetSample:
    """One fleet sample: the overview (node figures aggregated on the server, GPUs one by one only where
    they need a look) or every GPU one by one; --demo: the simulated fleet. Each engine planned."""
    source_given(args, args.fleet_command)
    plan = planner(args)
    if args.fleet_demo:
        from gpumem_tui.demo.fleet_answers import demo_fleet

        demo_alone(args)
        return plan(demo_fleet())
    connection, queries, at = inputs(args, overview)
    return plan(_read(connection, queries, at, args.query_timeout))


def history_from(args: argparse.Namespace, at: float, span_s: float) -> FleetHistory:
    """The fleet over `span_s` before `at` (the demo: its whole run, at most `span_s`). A read that fails
    is a history with no series and the reason, never the snapshot's failure."""
    if args.fleet_demo:
        from gpumem_tui.demo.fleet_history import demo_fleet_history

        return demo_fleet_history(span_s)
    import asyncio

    from gpumem_tui.sources.prometheus.client import PrometheusError
    from gpumem_tui.sources.prometheus.history import FleetHistory, step_for

    connection, queries, _ = inputs(args, overview=False)
    try:
        return asyncio.run(_history(connection, queries, at, span_s, args.query_timeout))
    except PrometheusError as exc:
        step = step_for(span_s)
        return FleetHistory(start=at - span_s, end=at, step_s=step, unknown={"history": f"the read failed: {exc}"})


async def _history(
    connection: Connection, queries: Queries, at: float, span_s: float, timeout_s: float
) -> FleetHistory:
    from gpumem_tui.sources.prometheus.client import PrometheusClient
    from gpumem_tui.sources.prometheus.history import read_history

    async with PrometheusClient(connection, query_timeout_s=timeout_s) as client:
        return await read_history(client, queries, at, span_s)


def run_snapshot(args: argparse.Namespace) -> int:
    sample = sample_from(args, overview=False)
    history = None if args.history is None else history_from(args, sample.evaluated_at, args.history)
    for warning in [*sample.warnings, *([sample.error] if sample.error else [])]:
        warn(warning)
    with reader_may_leave():
        if args.json:
            extra = {} if history is None else {"history": history.model_dump(mode="json")}
            print_json({"schema": SNAPSHOT_SCHEMA, **sample.model_dump(mode="json"), **extra})
        else:
            print_snapshot(sample, history)
    return 0


def run_check(args: argparse.Namespace) -> int:
    try:
        sample = sample_from(args, overview=True)
        findings = judge_fleet(sample, Thresholds())
    except Exception as exc:  # noqa: BLE001 - a monitoring plugin answers every failure with UNKNOWN
        return plugin_failed(exc, "fleet check")
    code, said = verdict(sample, findings)
    with reader_may_leave():
        if args.json:
            print_json(check_json(sample, findings, code))
        else:
            print_check(sample, findings, said)
    return code


def check_json(sample: FleetSample, findings: list[FleetFinding], code: int) -> dict:
    raised = [f.finding for f in findings]
    return {
        "schema": CHECK_SCHEMA,
        "source": sample.source,
        "evaluated_at": sample.evaluated_at,
        "state": sample.state,
        "coverage": sample.coverage.model_dump(mode="json"),
        "data_age_s": sample.data_age_s,
        "held_back_s": sample.held_back_s,
        "worst": worst(raised),
        "status": STATUS[code],
        "exit_code": code,
        "findings": [{"node": f.node, **f.finding.model_dump(mode="json")} for f in findings],
        "models": [m.model_dump(mode="json", exclude={"engines"}) for m in model_memory(sample)],
        "warnings": sample.warnings,
        "unknown": sample.unknown,
    }


def run_screen(args: argparse.Namespace) -> int:
    """`fleet` with no action: the fleet screen, Textual imported now."""
    from gpumem_tui.cli import fleet_screen

    return fleet_screen.run(args, inputs, demo_alone, planner(args))

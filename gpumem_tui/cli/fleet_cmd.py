"""`gpumem-tui fleet snapshot|check --prometheus URL`: the fleet as Prometheus holds it (docs/fleet-json.md).

`snapshot` prints one fleet sample: nodes, GPUs, engines and how each was joined, coverage and data age.
`rules` prints the recording rules that let the server precompute the overview's per-node figures.
`check` judges it (diagnosis/fleet.py) and exits as a monitoring plugin: 0 OK, 1 WARNING, 2 CRITICAL,
3 UNKNOWN (no data source: the server cannot be reached, refuses the credentials or runs out of time; bad
input; or, with its report, a server that holds no node and no engine). `snapshot` exits 2 on bad input and 3
when no source answers. Every failure is one line on stderr."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable

from gpumem_tui.app.fleet_history_view import history_lines
from gpumem_tui.catalog import CatalogError, load_catalog
from gpumem_tui.cli import fleet_screen
from gpumem_tui.cli.check_status import STATUS, UNKNOWN, exit_code, plugin_text
from gpumem_tui.cli.errors import NoSourceError, UsageError, crashed, exit_code_for, one_line, report, warn
from gpumem_tui.cli.option_places import BothPlaces
from gpumem_tui.cli.output import print_json, reader_may_leave
from gpumem_tui.demo.fleet_answers import demo_fleet
from gpumem_tui.demo.fleet_history import demo_fleet_history
from gpumem_tui.diagnosis.findings import Thresholds, worst
from gpumem_tui.diagnosis.fleet.judge import judge_fleet, nothing_read
from gpumem_tui.diagnosis.fleet.plans import AliasError, model_memory, parse_aliases, plan_fleet
from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.diagnosis.fleet.records import FleetFinding
from gpumem_tui.glyphs import for_terminal
from gpumem_tui.sources.http import tls
from gpumem_tui.sources.prometheus.client import (
    QUERY_TIMEOUT_S,
    Connection,
    PrometheusClient,
    PrometheusError,
    parse_header,
    parse_time,
    parse_url,
)
from gpumem_tui.sources.prometheus.history import FleetHistory, parse_span, read_history, step_for
from gpumem_tui.sources.prometheus.labels import NODE_CHOICES, POD_CHOICES, LabelChoice
from gpumem_tui.sources.prometheus.queries import Queries, SelectorError, parse_selector
from gpumem_tui.sources.prometheus.reader import FleetReader
from gpumem_tui.sources.prometheus.records import FleetSample
from gpumem_tui.sources.prometheus.rules import rule_group
from gpumem_tui.text import literal
from gpumem_tui.units import fmt_both

FAILED = {
    "down": "Prometheus cannot be reached",
    "auth": "Prometheus refused the credentials",
    "timeout": "Prometheus ran out of time",
    "query": "Prometheus rejected a query",
}
PLAN_FROM = {"catalog": "the catalog", "exporter": "its node's gpumem-tui export"}
INFO_LISTED = 5
"""Info findings of one code listed one by one up to this many; beyond, counted with one example."""
SNAPSHOT_SCHEMA = "gpumem-tui.fleet-snapshot/1"
CHECK_SCHEMA = "gpumem-tui.fleet-check/1"


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("fleet", help="the fleet from Prometheus: dcgm-exporter and vLLM series joined")
    # no action: the fleet screen (cli/fleet_screen.py) on the source these options name
    _source_options(parser)
    # the screen's own: dests apart from snapshot's --history, so one given before an action is seen
    parser.add_argument(
        "--interval",
        dest="screen_interval",
        type=_seconds,
        metavar="SECONDS",
        help="seconds between reads (default 15)",
    )
    parser.add_argument(
        "--history",
        dest="screen_history",
        type=_span,
        metavar="SPAN",
        help="how far back the history line looks: 30m, 1h (default), 6h ... (range queries, read once a minute)",
    )
    parser.set_defaults(run=lambda args: fleet_screen.run(args, inputs, demo_alone, planner(args)))
    # options given both before the action and after it: repeatable ones merged, two values refused
    actions = parser.add_subparsers(
        dest="fleet_command", metavar="ACTION", parser_class=type(parser), action=BothPlaces
    )
    snapshot = actions.add_parser("snapshot", help="one fleet sample: nodes, GPUs, engines, coverage")
    _source_options(snapshot, action=True)
    snapshot.add_argument("--json", action="store_true", help="print JSON (schema: docs/fleet-json.md)")
    snapshot.add_argument(
        "--history",
        type=_span,
        metavar="SPAN",
        help="also the fleet over the SPAN before the moment (30m, 1h, 6h ...): memory, KV, queue, preemptions",
    )
    snapshot.set_defaults(run=run_snapshot)
    check = actions.add_parser(
        "check", help="fleet findings, as a monitoring plugin (exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN)"
    )
    _source_options(check, action=True)
    check.add_argument("--json", action="store_true", help="print JSON (schema: docs/fleet-json.md)")
    check.set_defaults(run=run_check)
    rules = actions.add_parser(
        "rules", help="a Prometheus recording-rule group: the overview's per-node figures, computed by the server"
    )
    rules.add_argument(
        "--selector",
        default=argparse.SUPPRESS,
        metavar="'{label=\"value\"}'",
        help="record only these series, keeping these labels",
    )
    rules.add_argument(
        "--interval",
        dest="rule_interval",
        type=int,
        default=30,
        metavar="SECONDS",
        help="the group's evaluation interval (default 30: dcgm-exporter's collection interval)",
    )
    rules.set_defaults(run=run_rules)


def _source_options(parser: argparse.ArgumentParser, action: bool = False) -> None:
    """The source options, on `fleet` and again on each action. An action's own defaults are never set
    (`SUPPRESS`), so what was given before the action (`fleet --selector X check`) is kept: argparse lets a
    subcommand's defaults overwrite them. Which source is checked once parsed (`source_given`)."""
    unset: dict = {"default": argparse.SUPPRESS} if action else {}
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--prometheus", metavar="URL", help="the query API's base URL", **unset)
    source.add_argument(
        "--demo",
        dest="fleet_demo",
        action="store_true",
        help="a simulated fleet of nodes from the demo scenarios, computed here (no Prometheus needed)",
        **unset,
    )
    parser.add_argument(
        "--at", metavar="TIME", help="evaluate at this moment: Unix seconds or RFC 3339 (default: now)", **unset
    )
    connection_options(parser, action)
    how = parser.add_mutually_exclusive_group()
    how.add_argument(
        "--overview",
        action="store_true",
        help="per-node figures aggregated on the server, GPUs one by one only on nodes that need a look (the "
        "default of check and the screen; docs/fleet.md)",
        **unset,
    )
    how.add_argument(
        "--full",
        action="store_true",
        help="every GPU one by one (the default of snapshot): an answer that grows with GPUs",
        **unset,
    )
    label_options(parser, action)
    parser.add_argument(
        "--model-alias",
        action="append",
        metavar="SERVED=ORG/MODEL",
        help="the catalog model a served model name stands for (repeatable), so its engines get a plan",
        **(unset or {"default": []}),
    )
    parser.add_argument(
        "--catalog", action="append", metavar="DIR", help="extra catalog directory", **(unset or {"default": []})
    )


def label_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup, action: bool = False) -> None:
    """Which labels name a node and a pod: the fleet's commands, and `check`/the TUI on one of its nodes (so
    the node is the one the fleet names). `action`: on a fleet action, whose defaults are never set."""
    unset: dict = {"default": argparse.SUPPRESS} if action else {}
    parser.add_argument(
        "--node-label",
        choices=NODE_CHOICES,
        **(unset or {"default": "auto"}),
        help="the label of dcgm-exporter's series that names the node (default auto: Hostname, hostname, node, "
        "kubernetes_node, then instance's host)",
    )
    parser.add_argument(
        "--pod-label",
        choices=POD_CHOICES,
        **(unset or {"default": "auto"}),
        help="the label of dcgm-exporter's series that names the workload pod holding a GPU (default auto: "
        "exported_pod when present, else pod)",
    )


def connection_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup, action: bool = False) -> None:
    """How to reach and narrow a Prometheus: the fleet's commands, and `check`/the TUI on one of its nodes.
    `action`: on a fleet action, whose defaults are never set (`_source_options`)."""
    unset: dict = {"default": argparse.SUPPRESS} if action else {}
    parser.add_argument(
        "--selector",
        metavar="'{label=\"value\"}'",
        help="label matchers added to every query (one cluster, a tenant)",
        **unset,
    )
    parser.add_argument(
        "--header",
        action="append",
        metavar="'NAME: VALUE'",
        help="an HTTP header (repeatable)",
        **(unset or {"default": []}),
    )
    parser.add_argument(
        "--bearer-token-file", metavar="FILE", help="send the token in this file as a bearer token", **unset
    )
    parser.add_argument("--ca-file", metavar="FILE", help="trust the server certificates this CA file signs", **unset)
    parser.add_argument(
        "--query-timeout",
        type=_seconds,
        **(unset or {"default": QUERY_TIMEOUT_S}),
        metavar="SECONDS",
        help=f"what the server may take per query (default {QUERY_TIMEOUT_S:g}); the client waits 2 s longer",
    )


def node_history_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup, what: str) -> None:
    """`--history SPAN` of `check`/the TUI on one node: how far back its forensics reads (`what`: who reads)."""
    parser.add_argument(
        "--history",
        dest="node_history",
        type=_span,
        metavar="SPAN",
        help=f"how far back {what} reads the node's series: 30m, 1h (default), 6h ... (range queries)",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r}: seconds, more than 0 and at most 3600")
    return value


def _span(text: str) -> float:
    try:
        return parse_span(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--history ")) from None


def _inputs(
    args: argparse.Namespace, look: float | None = None, command: str = "fleet"
) -> tuple[Connection, Queries, float]:
    """The source options read and checked (`command` names who was given them in an error; '' for the TUI)."""
    said = f"{command}: " if command else ""
    try:
        url = parse_url(args.prometheus)
        headers = tuple(parse_header(h) for h in args.header)
        at = time.time() if args.at is None else parse_time(args.at)
        labels = LabelChoice(getattr(args, "node_label", "auto"), getattr(args, "pod_label", "auto"))
        queries = Queries(parse_selector(args.selector), look, labels)
        connection = Connection(url, headers, args.bearer_token_file, args.ca_file)
        connection.request_headers()  # reads the token file now: a missing one is bad input
    except (ValueError, SelectorError) as exc:
        raise UsageError(f"{said}{exc}") from None
    if args.ca_file is not None:
        try:
            tls(args.ca_file)
        except OSError as exc:  # ssl.SSLError too: a file that holds no certificate
            raise UsageError(f"{said}--ca-file {args.ca_file}: {exc.strerror or exc}") from None
    return connection, queries, at


def _read(connection: Connection, queries: Queries, at: float, timeout_s: float) -> FleetSample:
    read: list[FleetSample] = []

    async def run() -> None:
        # the sample is handed over aside: on the main thread Python 3.11's asyncio.run formats its task,
        # result included, on the way out (0.16 s of a 1,000-node sample's repr)
        async with PrometheusClient(connection, query_timeout_s=timeout_s) as client:
            read.append(await FleetReader(queries, FleetRules()).read(client, at))

    try:
        asyncio.run(run())
    except PrometheusError as exc:
        raise NoSourceError(f"{FAILED.get(exc.kind, 'Prometheus failed')}: {exc}") from None
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
    overview = args.overview or (overview and not args.full)
    return _inputs(args, Thresholds().headroom_warning_fraction if overview else None)


def planner(args: argparse.Namespace) -> Callable[[FleetSample], FleetSample]:
    """What plans each engine of a sample from the catalog (--catalog, --model-alias read now: bad ones are
    bad input)."""
    try:
        catalog = load_catalog(args.catalog)
        aliases = parse_aliases(args.model_alias, catalog)
    except (CatalogError, AliasError) as exc:
        raise UsageError(f"fleet: {exc}") from None
    return lambda sample: plan_fleet(sample, catalog, aliases)


def node_source(args: argparse.Namespace, command: str) -> tuple[Connection, Queries, float | None]:
    """The source options of `check`/the TUI on one node: (connection, the queries' selector and labels, --at
    or None)."""
    connection, queries, at = _inputs(args, None, command)
    return connection, queries, None if args.at is None else at


def no_screen_options(args: argparse.Namespace, action: str) -> None:
    """`--interval` and `--history` before an action are the fleet screen's: refused, never ignored."""
    for option, value in (("--interval", args.screen_interval), ("--history", args.screen_history)):
        if value is not None:
            raise UsageError(
                f"fleet {action}: {option} before the action is the fleet screen's; the action would not use it"
            )


def _nothing_read(args: argparse.Namespace) -> None:
    """`rules` reads nothing: a source or a way to read given before it is refused, never ignored (--selector
    shapes the rules)."""
    given = {
        "--prometheus": args.prometheus is not None,
        "--demo": args.fleet_demo,
        "--at": args.at is not None,
        "--header": bool(args.header),
        "--bearer-token-file": args.bearer_token_file is not None,
        "--ca-file": args.ca_file is not None,
        "--query-timeout": args.query_timeout != QUERY_TIMEOUT_S,
        "--overview": args.overview,
        "--full": args.full,
        "--node-label": args.node_label != "auto",
        "--pod-label": args.pod_label != "auto",
        "--model-alias": bool(args.model_alias),
        "--catalog": bool(args.catalog),
    }
    unused = [option for option, yes in given.items() if yes]
    if unused:
        raise UsageError(f"fleet rules: {unused[0]} before the action is for reading the fleet; rules reads nothing")


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
        demo_alone(args)
        return plan(demo_fleet())
    connection, queries, at = inputs(args, overview)
    return plan(_read(connection, queries, at, args.query_timeout))


def history_from(args: argparse.Namespace, at: float, span_s: float) -> FleetHistory:
    """The fleet over `span_s` before `at` (the demo: its whole run, at most `span_s`). A read that fails
    is a history with no series and the reason, never the snapshot's failure."""
    if args.fleet_demo:
        return demo_fleet_history(span_s)
    connection, queries, _ = inputs(args, overview=False)
    try:
        return asyncio.run(_history(connection, queries, at, span_s, args.query_timeout))
    except PrometheusError as exc:
        step = step_for(span_s)
        return FleetHistory(start=at - span_s, end=at, step_s=step, unknown={"history": f"the read failed: {exc}"})


async def _history(
    connection: Connection, queries: Queries, at: float, span_s: float, timeout_s: float
) -> FleetHistory:
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
            _print_snapshot(sample)
            if history is not None:
                _write(["", *history_lines(history, for_terminal(False, sys.stdout))])
    return 0


def run_check(args: argparse.Namespace) -> int:
    try:
        sample = sample_from(args, overview=True)
        findings = judge_fleet(sample, Thresholds())
    except Exception as exc:  # noqa: BLE001 - a monitoring plugin answers every failure with UNKNOWN
        report(one_line(exc) if exit_code_for(exc) is not None else crashed(exc, "fleet check"))
        return UNKNOWN
    code = exit_code([f.finding for f in findings])
    if code == 0 and nothing_read(sample):  # nothing can be called OK
        code = UNKNOWN
    with reader_may_leave():
        if args.json:
            print_json(check_json(sample, findings, code))
        else:
            _print_check(sample, findings, code)
    return code


def run_rules(args: argparse.Namespace) -> int:
    """Print the recording-rule group (YAML) the overview reads when the server has it (docs/fleet.md)."""
    no_screen_options(args, "rules")
    _nothing_read(args)
    try:
        matchers = parse_selector(args.selector)
    except SelectorError as exc:
        raise UsageError(f"fleet rules: {exc}") from None
    if not 1 <= args.rule_interval <= 3600:
        raise UsageError(f"fleet rules: --interval {args.rule_interval}: seconds, 1 to 3600")
    with reader_may_leave():
        sys.stdout.write(rule_group(Queries(matchers), args.rule_interval))
    return 0


def failed(exc: BaseException) -> int:
    """`fleet check`'s argument errors are UNKNOWN too (3), one line."""
    report(one_line(exc) if exit_code_for(exc) is not None else crashed(exc, "fleet check"))
    return UNKNOWN


def coverage_line(sample: FleetSample) -> str:
    c = sample.coverage
    line = f"{c.nodes:,} nodes, {c.gpus:,} GPUs, {c.engines:,} engines, {c.joined:,} joined"
    if c.not_joined:
        line += f" ({c.not_joined:,} not joined)"
    age = "unknown" if sample.data_age_s is None else f"{sample.data_age_s:.0f} s"
    return f"{line}; data age {age}"


def check_json(sample: FleetSample, findings: list[FleetFinding], code: int) -> dict:
    raised = [f.finding for f in findings]
    return {
        "schema": CHECK_SCHEMA,
        "source": sample.source,
        "evaluated_at": sample.evaluated_at,
        "state": sample.state,
        "coverage": sample.coverage.model_dump(mode="json"),
        "data_age_s": sample.data_age_s,
        "worst": worst(raised),
        "status": STATUS[code],
        "exit_code": code,
        "findings": [{"node": f.node, **f.finding.model_dump(mode="json")} for f in findings],
        "models": [m.model_dump(mode="json", exclude={"engines"}) for m in model_memory(sample)],
        "warnings": sample.warnings,
        "unknown": sample.unknown,
    }


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def _bytes(value: int | None, unknown: dict[str, str], field: str) -> str:
    if value is not None:
        return fmt_both(value)
    return "n/a" if unknown.get(field, "").startswith("n/a") else "unknown"


def _write(lines: list[str]) -> None:
    """Plain lines, outside text shown literally, written at once: a reader that leaves (`| head -1`)
    raises BrokenPipeError here, which keeps the exit status (rich's console would exit 1 instead)."""
    sys.stdout.write("".join(literal(line) + "\n" for line in lines))


def _print_snapshot(sample: FleetSample) -> None:
    lines = [f"{sample.source} at {_when(sample.evaluated_at)}: {coverage_line(sample)}"]
    lines += [f"  {what} unknown: {why}" for what, why in sample.unknown.items()]
    lines += ["", "Nodes:"]
    for node in sample.nodes:
        cards = ", ".join(f"{n} x {card}" for card, n in node.cards.items()) or "no GPU series"
        stale = " (stale)" if node.name in sample.stale_nodes else ""
        others = _bytes(node.other_processes_bytes, node.unknown, "other_processes_bytes")
        lines.append(
            f"  {node.name}{stale}: {cards}; used {_bytes(node.used_bytes, node.unknown, 'used_bytes')}, "
            f"reserved {_bytes(node.reserved_bytes, node.unknown, 'reserved_bytes')}, "
            f"free {_bytes(node.free_bytes, node.unknown, 'free_bytes')}"
            + (f" (from {node.memory_from})" if node.memory_from not in (None, "dcgm-exporter") else "")
            + (
                f" (dcgm-exporter's; its gpumem-tui export reads used {fmt_both(node.exporter_used_bytes)})"
                if node.exporter_used_bytes is not None
                else ""
            )
            + (f", other processes {others}" if node.other_processes_bytes is not None else "")
            + f"; engines: {', '.join(node.engines) or '-'}"
        )
    lines += ["", "Engines:"]
    for e in sample.engines:
        kv = "unknown" if e.kv_usage_fraction is None else f"{e.kv_usage_fraction * 100:.1f} %"
        pool = "unknown" if e.pool_tokens is None else f"{e.pool_tokens:,} tokens"
        if e.planned_bytes is not None:
            planned = f"planned {fmt_both(e.planned_bytes)} (from {PLAN_FROM.get(e.plan_from or '', e.plan_from)})"
        else:
            planned = f"planned unknown: {e.unknown.get('planned_bytes', 'no plan was made')}"
        lines.append(f"  {e.name} on {e.node or '?'}: KV {kv} of {pool}; {planned}; {e.joined}: {e.join_reason}")
    _write(lines)


def _print_check(sample: FleetSample, findings: list[FleetFinding], code: int) -> None:
    top = findings[0].finding.title if findings and code else "nothing needs a look"
    if code == UNKNOWN:
        top = nothing_read(sample) or top
    lines = [f"{STATUS[code]} - {plugin_text(top)}; {coverage_line(sample)}"]
    infos: dict[str, list[FleetFinding]] = {}
    for f in findings:
        if f.finding.severity == "info":
            infos.setdefault(f.finding.code, []).append(f)
            continue
        node = f"[{f.node}] " if f.node else ""
        # no `|` in any line: a monitoring system reads the first one as the start of performance data
        lines.append(plugin_text(f"{f.finding.severity:8} {f.finding.code}: {node}{f.finding.title}"))
    for kind, same in infos.items():
        if len(same) > INFO_LISTED:  # a fleet has thousands of GPUs as planned: counted, one example
            nodes = len({f.node for f in same})
            first = same[0]
            lines.append(
                plugin_text(
                    f"info     {kind}: {len(same):,} on {nodes:,} node{'s' * (nodes != 1)}, "
                    f"such as [{first.node}] {first.finding.title} (--json lists each)"
                )
            )
            continue
        for f in same:
            node = f"[{f.node}] " if f.node else ""
            lines.append(plugin_text(f"info     {kind}: {node}{f.finding.title}"))
    if not findings:
        lines.append(f"Evaluated at {_when(sample.evaluated_at)} on {sample.source}.")
    _write(lines)

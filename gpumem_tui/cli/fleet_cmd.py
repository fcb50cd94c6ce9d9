"""`gpumem-tui fleet snapshot|check --prometheus URL`: the fleet as Prometheus holds it (docs/fleet-json.md).

`snapshot` prints one fleet sample: nodes, GPUs, engines and how each was joined, coverage and data age.
`check` judges it (diagnosis/fleet.py) and exits as a monitoring plugin: 0 OK, 1 WARNING, 2 CRITICAL,
3 UNKNOWN (no data source: the server cannot be reached, refuses the credentials or runs out of time; bad
input). `snapshot` exits 2 on bad input and 3 when no source answers. Every failure is one line on stderr."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from gpumem_tui.cli import fleet_screen
from gpumem_tui.cli.check_status import STATUS, UNKNOWN, exit_code, plugin_text
from gpumem_tui.cli.errors import NoSourceError, UsageError, crashed, exit_code_for, one_line, report, warn
from gpumem_tui.cli.output import print_json, reader_may_leave
from gpumem_tui.demo.fleet_answers import demo_fleet
from gpumem_tui.diagnosis.findings import Thresholds, worst
from gpumem_tui.diagnosis.fleet import FleetFinding, judge_fleet
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
from gpumem_tui.sources.prometheus.fleet import read_fleet
from gpumem_tui.sources.prometheus.queries import Queries, SelectorError, parse_selector
from gpumem_tui.sources.prometheus.records import FleetSample
from gpumem_tui.text import literal
from gpumem_tui.units import fmt_both

FAILED = {
    "down": "Prometheus cannot be reached",
    "auth": "Prometheus refused the credentials",
    "timeout": "Prometheus ran out of time",
    "query": "Prometheus rejected a query",
}
INFO_LISTED = 5
"""Info findings of one code listed one by one up to this many; beyond, counted with one example."""
SNAPSHOT_SCHEMA = "gpumem-tui.fleet-snapshot/1"
CHECK_SCHEMA = "gpumem-tui.fleet-check/1"


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("fleet", help="the fleet from Prometheus: dcgm-exporter and vLLM series joined")
    # no action: the fleet screen (cli/fleet_screen.py) on the source these options name
    _source_options(parser, required=False)
    parser.add_argument(
        "--interval", type=_seconds, default=15.0, metavar="SECONDS", help="seconds between reads (default 15)"
    )
    parser.set_defaults(run=lambda args: fleet_screen.run(args, inputs, demo_alone))
    actions = parser.add_subparsers(dest="fleet_command", metavar="ACTION", parser_class=type(parser))
    snapshot = actions.add_parser("snapshot", help="one fleet sample: nodes, GPUs, engines, coverage")
    _source_options(snapshot)
    snapshot.add_argument("--json", action="store_true", help="print JSON (schema: docs/fleet-json.md)")
    snapshot.set_defaults(run=run_snapshot)
    check = actions.add_parser(
        "check", help="fleet findings, as a monitoring plugin (exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN)"
    )
    _source_options(check)
    check.add_argument("--json", action="store_true", help="print JSON (schema: docs/fleet-json.md)")
    check.set_defaults(run=run_check)


def _source_options(parser: argparse.ArgumentParser, required: bool = True) -> None:
    source = parser.add_mutually_exclusive_group(required=required)
    source.add_argument("--prometheus", metavar="URL", help="the query API's base URL")
    source.add_argument(
        "--demo",
        dest="fleet_demo",
        action="store_true",
        help="a simulated fleet of nodes from the demo scenarios, computed here (no Prometheus needed)",
    )
    parser.add_argument("--at", metavar="TIME", help="evaluate at this moment: Unix seconds or RFC 3339 (default: now)")
    connection_options(parser)
    parser.add_argument(
        "--overview",
        action="store_true",
        help="node memory summed on the server, GPUs one by one only under the headroom fraction: fewer bytes "
        "and less client CPU where GPUs have headroom, more server time (docs/fleet.md)",
    )


def connection_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """How to reach and narrow a Prometheus: the fleet's commands, and `check`/the TUI on one of its nodes."""
    parser.add_argument(
        "--selector", metavar="'{label=\"value\"}'", help="label matchers added to every query (one cluster, a tenant)"
    )
    parser.add_argument(
        "--header", action="append", default=[], metavar="'NAME: VALUE'", help="an HTTP header (repeatable)"
    )
    parser.add_argument("--bearer-token-file", metavar="FILE", help="send the token in this file as a bearer token")
    parser.add_argument("--ca-file", metavar="FILE", help="trust the server certificates this CA file signs")
    parser.add_argument(
        "--query-timeout",
        type=_seconds,
        default=QUERY_TIMEOUT_S,
        metavar="SECONDS",
        help=f"what the server may take per query (default {QUERY_TIMEOUT_S:g}); the client waits 2 s longer",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r}: seconds, more than 0 and at most 3600")
    return value


def _inputs(
    args: argparse.Namespace, look: float | None = None, command: str = "fleet"
) -> tuple[Connection, Queries, float]:
    """The source options read and checked (`command` names who was given them in an error; '' for the TUI)."""
    said = f"{command}: " if command else ""
    try:
        url = parse_url(args.prometheus)
        headers = tuple(parse_header(h) for h in args.header)
        at = time.time() if args.at is None else parse_time(args.at)
        queries = Queries(parse_selector(args.selector), look)
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


async def _read(connection: Connection, queries: Queries, at: float, timeout_s: float) -> FleetSample:
    try:
        async with PrometheusClient(connection, query_timeout_s=timeout_s) as client:
            return await read_fleet(client, queries, at)
    except PrometheusError as exc:
        raise NoSourceError(f"{FAILED.get(exc.kind, 'Prometheus failed')}: {exc}") from None


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
        )
        if value
    ]
    if given:
        raise UsageError(
            f"fleet: {', '.join(given)} {'is' if len(given) == 1 else 'are'} for --prometheus; "
            "--demo is a simulated fleet at its own moment"
        )


def inputs(args: argparse.Namespace) -> tuple[Connection, Queries, float]:
    """The source options read, --overview's look included (the fleet screen reads with the same)."""
    return _inputs(args, Thresholds().headroom_warning_fraction if args.overview else None)


def node_source(args: argparse.Namespace, command: str) -> tuple[Connection, str, float | None]:
    """The source options of `check`/the TUI on one node: (connection, the selector's matchers, --at or None)."""
    connection, queries, at = _inputs(args, None, command)
    return connection, queries.matchers, None if args.at is None else at


def sample_from(args: argparse.Namespace) -> FleetSample:
    """One fleet sample: every GPU read one by one, or with --overview only those whose free memory is under
    the headroom warning fraction of the card (node figures summed on the server); --demo: the simulated fleet."""
    if args.fleet_demo:
        demo_alone(args)
        return demo_fleet()
    connection, queries, at = inputs(args)
    return asyncio.run(_read(connection, queries, at, args.query_timeout))


def run_snapshot(args: argparse.Namespace) -> int:
    sample = sample_from(args)
    for warning in [*sample.warnings, *([sample.error] if sample.error else [])]:
        warn(warning)
    with reader_may_leave():
        if args.json:
            print_json({"schema": SNAPSHOT_SCHEMA, **sample.model_dump(mode="json")})
        else:
            _print_snapshot(sample)
    return 0


def run_check(args: argparse.Namespace) -> int:
    try:
        sample = sample_from(args)
        findings = judge_fleet(sample, Thresholds())
    except Exception as exc:  # noqa: BLE001 - a monitoring plugin answers every failure with UNKNOWN
        report(one_line(exc) if exit_code_for(exc) is not None else crashed(exc, "fleet check"))
        return UNKNOWN
    code = exit_code([f.finding for f in findings])
    with reader_may_leave():
        if args.json:
            print_json(check_json(sample, findings, code))
        else:
            _print_check(sample, findings, code)
    return code


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
        lines.append(
            f"  {node.name}{stale}: {cards}; used {_bytes(node.used_bytes, node.unknown, 'used_bytes')}, "
            f"reserved {_bytes(node.reserved_bytes, node.unknown, 'reserved_bytes')}, "
            f"free {_bytes(node.free_bytes, node.unknown, 'free_bytes')}; engines: {', '.join(node.engines) or '-'}"
        )
    lines += ["", "Engines:"]
    for e in sample.engines:
        kv = "unknown" if e.kv_usage_fraction is None else f"{e.kv_usage_fraction * 100:.1f} %"
        pool = "unknown" if e.pool_tokens is None else f"{e.pool_tokens:,} tokens"
        lines.append(f"  {e.name} on {e.node or '?'}: KV {kv} of {pool}; {e.joined}: {e.join_reason}")
    _write(lines)


def _print_check(sample: FleetSample, findings: list[FleetFinding], code: int) -> None:
    top = findings[0].finding.title if findings and code else "nothing needs a look"
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

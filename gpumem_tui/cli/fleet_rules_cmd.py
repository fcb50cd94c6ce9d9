"""`gpumem-tui fleet rules`: the recording rules the fleet's overview reads, the alerts on the exporter's
findings, or both as one PrometheusRule for the Prometheus operator. Reads nothing; prints YAML."""

from __future__ import annotations

import argparse
import re
import sys

from gpumem_tui.cli.errors import UsageError
from gpumem_tui.cli.fleet_cmd import no_screen_options
from gpumem_tui.cli.output import reader_may_leave
from gpumem_tui.sources.prometheus.queries import Queries, SelectorError, parse_selector
from gpumem_tui.sources.prometheus.query_limits import QUERY_TIMEOUT_S

DNS_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?")
"""A Kubernetes namespace's name (RFC 1123 label)."""


def run_rules(args: argparse.Namespace) -> int:
    """Print the recording-rule group (YAML) the overview reads when the server has it (docs/fleet.md), or
    with --alerts the alerting rules on the exporter's findings (docs/deploy.md)."""
    no_screen_options(args, "rules")
    _nothing_read(args)
    try:
        matchers = parse_selector(args.selector)
    except SelectorError as exc:
        raise UsageError(f"fleet rules: {exc}") from None
    for option, seconds in (("--interval", args.rule_interval), ("--scrape-interval", args.scrape_interval)):
        if seconds is not None and not 1 <= seconds <= 3600:
            raise UsageError(f"fleet rules: {option} {seconds}: seconds, 1 to 3600")
    _rules_combination(args)
    from gpumem_tui.sources.prometheus.rules import rule_group

    if args.kubernetes:
        text = rule_manifest(matchers, args)
    elif args.alerts:
        text = alert_file(matchers, args)
    else:
        text = rule_group(_queries(matchers), args.rule_interval or 30)
    with reader_may_leave():
        sys.stdout.write(text)
    return 0


def _rules_combination(args: argparse.Namespace) -> None:
    """The options of `fleet rules` that go together, else exit 2 naming the one that does not."""
    if args.kubernetes and args.alerts:
        raise UsageError("fleet rules: --kubernetes carries the alerts already; give one of --kubernetes, --alerts")
    if args.scrape_interval is not None and not (args.alerts or args.kubernetes):
        raise UsageError("fleet rules: --scrape-interval is for --alerts; the recording rules do not use it")
    if args.namespace is not None and not args.kubernetes:
        raise UsageError("fleet rules: --namespace is the PrometheusRule's: add --kubernetes")
    if args.namespace is not None and not DNS_LABEL.fullmatch(args.namespace):
        raise UsageError(f"fleet rules: --namespace {args.namespace!r}: a Kubernetes name (a-z, 0-9, -; 1 to 63)")


def _queries(matchers: str) -> Queries:
    """The overview's queries the rules record, with the headroom fraction the count under it is judged by."""
    from gpumem_tui.diagnosis.findings import Thresholds

    return Queries(matchers, look=Thresholds().headroom_warning_fraction)


def rule_manifest(matchers: str, args: argparse.Namespace) -> str:
    """`fleet rules --kubernetes`: the recording group and the alerting group as one PrometheusRule."""
    from gpumem_tui.export.alerts import alert_groups
    from gpumem_tui.sources.prometheus.rule_files import prometheus_rule
    from gpumem_tui.sources.prometheus.rules import recording_group

    groups = [
        recording_group(_queries(matchers), args.rule_interval or 30),
        *alert_groups(matchers, args.scrape_interval or 15, args.rule_interval),
    ]
    return prometheus_rule(groups, namespace=args.namespace or "gpumem-tui")


def alert_file(matchers: str, args: argparse.Namespace) -> str:
    """`fleet rules --alerts`: the alerting group as a rule file."""
    from gpumem_tui.export.alerts import alert_groups
    from gpumem_tui.sources.prometheus.rule_files import rule_file

    scrape = args.scrape_interval or 15
    comments = (
        "gpumem-tui fleet rules --alerts: an alert per finding code of `gpumem-tui export` (docs/deploy.md).",
        f"For an exporter scraped every {scrape} s; load it with rule_files, check it with `promtool check rules`.",
    )
    return rule_file(alert_groups(matchers, scrape, args.rule_interval), comments)


def _nothing_read(args: argparse.Namespace) -> None:
    """`rules` reads nothing: a source or a way to read given before it is refused, never ignored (--selector
    shapes the rules)."""
    given = {
        "--prometheus": args.prometheus is not None,
        "--demo": args.fleet_demo,
        "--at": args.at is not None,
        "--header": bool(args.header),
        "--bearer-token-file": args.bearer_token_file is not None,
        "--username": args.username is not None,
        "--password-file": args.password_file is not None,
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

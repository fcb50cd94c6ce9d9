"""The Prometheus options read when a command runs (the fleet's commands, and `check`/the TUI on one node):
the connection, the queries' selector and labels, the moment; what a failed read says."""

from __future__ import annotations

import argparse
import time

from gpumem_tui.cli.errors import UsageError, warn
from gpumem_tui.sources.http import tls
from gpumem_tui.sources.prometheus.client import Connection, connect, parse_header, parse_time, parse_url
from gpumem_tui.sources.prometheus.labels import LabelChoice
from gpumem_tui.sources.prometheus.queries import Queries, SelectorError, parse_selector


def source_inputs(
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
        username, password_file = getattr(args, "username", None), getattr(args, "password_file", None)
        connection = connect(url, headers, args.bearer_token_file, args.ca_file, username, password_file)
        connection.request_headers()  # reads the secret files now: a missing or unusable one is bad input
        connection.basic_auth()
    except (ValueError, SelectorError) as exc:
        raise UsageError(f"{said}{exc}") from None
    for warning in connection.warnings():
        warn(warning)
    if args.ca_file is not None:
        try:
            tls(args.ca_file)
        except OSError as exc:  # ssl.SSLError: a file that holds no certificate (its words never quote it)
            raise UsageError(f"{said}--ca-file {args.ca_file}: {exc.strerror or exc}") from None
        except ValueError as exc:  # not a regular file, or too large: never read
            raise UsageError(f"{said}{exc}") from None
    return connection, queries, at


def node_source(args: argparse.Namespace, command: str) -> tuple[Connection, Queries, float | None]:
    """The source options of `check`/the TUI on one node: (connection, the queries' selector and labels, --at
    or None)."""
    connection, queries, at = source_inputs(args, None, command)
    return connection, queries, None if args.at is None else at

"""`gpumem-tui export`: the options; the action (export_cmd.py) is imported when it runs."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from gpumem_tui.cli.lazy import action
from gpumem_tui.cli.planargs import add_plan_options, count, seconds
from gpumem_tui.cli.source_opts import add_endpoint, add_moment, add_sources
from gpumem_tui.export.limits import Limits

DEFAULT_INTERVAL_S = 5.0
"""A sample every 5 s: fresher than a 15 s scrape, and what `check` steps a demo by."""
DEFAULT_TOP = 5
"""Processes that are not an engine published per GPU, beside the `other` row."""
MAX_CONNECTIONS = 4096
"""The most --max-connections takes: a thread each, and under the usual 1,024 descriptors a process may open
many would wait for a descriptor rather than a slot."""


@dataclass(frozen=True)
class Listen:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


_ADDRESS = re.compile(r"\[(?P<v6>[^\[\]]+)\]:(?P<port6>\d+)|(?P<host>[^:\[\]]+):(?P<port>\d+)")


def listen_address(text: str) -> Listen:
    """`HOST:PORT`, an IPv6 address in brackets (`[::1]:9877`); port 0 takes a free one."""
    found = _ADDRESS.fullmatch(text)
    if found is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT (an IPv6 address in brackets: [::1]:9877)")
    host = found.group("v6") or found.group("host")
    port = int(found.group("port6") or found.group("port"))
    if port > 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: a port is from 0 to 65535")
    return Listen(host, port)


DEFAULT_LISTEN = Listen("127.0.0.1", 9877)


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--listen",
        type=listen_address,
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"where to serve /metrics (default {DEFAULT_LISTEN}; port 0: a free one, printed)",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="serve on an address other than loopback (0.0.0.0, ::, this node's): docs/export.md says what it exposes",
    )
    limits = Limits()
    parser.add_argument(
        "--max-connections",
        type=count(1, MAX_CONNECTIONS),
        default=limits.connections,
        metavar="N",
        help=f"connections served at once, a thread and a descriptor each; more wait in the listen queue "
        f"(default {limits.connections})",
    )
    parser.add_argument(
        "--request-timeout",
        type=seconds(0.1, 3600),
        default=limits.request_s,
        metavar="SECONDS",
        help=f"a connection that has not sent its whole request by then is closed (default {limits.request_s:g})",
    )
    parser.add_argument(
        "--answer-timeout",
        type=seconds(0.1, 3600),
        default=limits.answer_s,
        metavar="SECONDS",
        help=f"a connection not answered by then, from its start, is closed: a client that reads slowly "
        f"(default {limits.answer_s:g}; at least --request-timeout)",
    )
    add_sources(
        parser,
        demo=" (default {default}): {shipped}, or a .toml file",
        replay="a recording made with --record",
    )
    add_moment(
        parser,
        "where the first refresh is, in seconds into the scenario (default: where the TUI opens) or the "
        "recording (default: its start); each next refresh is --interval seconds later",
    )
    add_endpoint(parser)
    parser.add_argument(
        "--interval",
        type=seconds(0.1, 3600),
        default=DEFAULT_INTERVAL_S,
        metavar="SECONDS",
        help=f"sample and judge every (default {DEFAULT_INTERVAL_S:g}, at least 0.1); never per scrape",
    )
    parser.add_argument(
        "--top-processes",
        type=count(0, 1000),
        default=DEFAULT_TOP,
        metavar="N",
        help=f"processes that are not an engine published per GPU, the largest first; the rest sum into one "
        f"pid='other' row (default {DEFAULT_TOP})",
    )
    add_plan_options(
        parser.add_argument_group("a plan to judge against (default: one made from what is running)"),
        "judge against a plan",
    )
    parser.set_defaults(run=action("export_cmd:run"))

"""`gpumem-tui export`: this node's GPU memory, plans and findings as Prometheus metrics (docs/export.md).

The same sample, plans and findings the TUI shows: the feed the TUI reads, judged by the same
`Investigation`, on the refresh interval in a loop of its own; a scrape reads the last refresh and never
samples. It listens on 127.0.0.1 unless told otherwise, and on any address that is not loopback only with
--allow-remote. Bad input (an address, a port in use, a scenario, a recording) is one line and exit 2
before anything is served; a source that fails later makes that refresh's series go, never the exporter.
SIGTERM or SIGINT stops it (exit 0)."""

from __future__ import annotations

import argparse
import asyncio
import errno
import ipaddress
import re
import signal
import socket
from dataclasses import dataclass

from gpumem_tui.cli.errors import UsageError, crashed, endpoints_need_live, one_line, report
from gpumem_tui.cli.export_sources import Stepped, SteppedDemo, SteppedReplay, live_feed
from gpumem_tui.cli.planargs import add_plan_options, count, seconds
from gpumem_tui.cli.tui_cmd import build_judge
from gpumem_tui.demo import DEFAULT_SCENARIO, load_scenario, scenario_names
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.export.evaluation import Evaluator
from gpumem_tui.export.server import ExportServer, serve
from gpumem_tui.sources.feed import Feed
from gpumem_tui.sources.nvml import NvmlSource
from gpumem_tui.text import literal

DEFAULT_INTERVAL_S = 5.0
"""A sample every 5 s: fresher than a 15 s scrape, and what `check` steps a demo by."""
DEFAULT_TOP = 5
"""Processes that are not an engine published per GPU, beside the `other` row."""


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


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "export",
        help="serve this node's GPU memory, plans and findings to Prometheus (/metrics; docs/export.md)",
    )
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
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--demo",
        nargs="?",
        const=DEFAULT_SCENARIO,
        metavar="SCENARIO",
        help=f"a simulated node (default {DEFAULT_SCENARIO}): {', '.join(scenario_names())}, or a .toml file",
    )
    source.add_argument("--replay", metavar="FILE", help="a recording made with --record")
    parser.add_argument(
        "--at",
        type=seconds(),
        metavar="SECONDS",
        help="where the first refresh is, in seconds into the scenario (default: where the TUI opens) or the "
        "recording (default: its start); each next refresh is --interval seconds later",
    )
    parser.add_argument("--seed", type=int, help="seed of the simulated node (default: the scenario's)")
    parser.add_argument("--endpoint", action="append", default=[], metavar="URL", help="an engine endpoint (live)")
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
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    endpoints_need_live(args)
    if args.at is not None and args.demo is None and args.replay is None:
        raise UsageError("--at needs --demo or --replay")
    if not args.allow_remote and not _loopback(args.listen):
        raise UsageError(
            f"--listen {args.listen} is reachable from other machines: add --allow-remote to serve there "
            "(docs/export.md says what it exposes)"
        )
    judge = build_judge(args)
    asyncio.run(_export(args, judge))
    return 0


def _loopback(listen: Listen) -> bool:
    """Every address the host name stands for is a loopback address."""
    try:
        found = socket.getaddrinfo(listen.host, listen.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UsageError(f"--listen {listen}: {exc}") from None
    return all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in found)


async def _export(args: argparse.Namespace, judge: Judge) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for name in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(name, stop.set)
    feed, nvml = _feed(args, judge)
    evaluator = Evaluator(feed, judge, _Said().failed)
    try:
        server = _serve(evaluator, args)
        try:
            print(
                f"gpumem-tui export: serving {server.url} ({literal(feed.name)}, every {args.interval:g} s)", flush=True
            )
            if isinstance(feed, Stepped):
                await evaluator.catch_up(feed.lead_in())
            await evaluator.run(args.interval, stop)
        finally:
            server.close()
    finally:
        await feed.aclose()
        if nvml is not None:
            nvml.close()


def _feed(args: argparse.Namespace, judge: Judge) -> tuple[Feed, NvmlSource | None]:
    if args.demo is not None:
        scenario = load_scenario(args.demo)
        at = scenario.start_s if args.at is None else args.at
        if at > scenario.duration_s:
            raise UsageError(f"--at {at:g}: scenario {scenario.name} lasts {scenario.duration_s:g} s")
        history_s = judge.thresholds.forensics_window_s
        return SteppedDemo(args.demo, at, args.interval, history_s, args.seed), None
    if args.replay:
        return SteppedReplay(args.replay, args.at or 0.0, args.interval), None
    return live_feed(args.endpoint)


def _serve(evaluator: Evaluator, args: argparse.Namespace) -> ExportServer:
    try:
        return serve(evaluator, args.listen.host, args.listen.port, args.top_processes)
    except OSError as exc:
        why = "the port is in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
        raise UsageError(f"--listen {args.listen}: {why}") from None


class _Said:
    """Says a failed refresh on stderr unless the last failure said the same (a source down for an hour is
    one line, not one per refresh): a source's error as it is, a fault in the judge as a crash line (its
    traceback in a file)."""

    def __init__(self):
        self.last: str | None = None

    def failed(self, where: str, exc: BaseException) -> None:
        words = f"a refresh failed: {type(exc).__name__}: {one_line(exc)}"
        if words == self.last:
            return
        self.last = words
        report(f"export: {words}" if where == "sample" else crashed(exc, "export"))

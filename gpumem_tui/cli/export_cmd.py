"""`gpumem-tui export`: this node's GPU memory, plans and findings as Prometheus metrics (docs/export.md).

The same sample, plans and findings the TUI shows: the feed the TUI reads, judged by the same
`Investigation`, on the refresh interval in a loop of its own; a scrape reads the last refresh and never
samples. It listens on 127.0.0.1 unless told otherwise, and on any address that is not loopback only with
--allow-remote. Bad input (an address, a port in use, a scenario, a recording) is one line and exit 2
before anything is served; a source that fails later makes that refresh's series go, never the exporter.
SIGTERM or SIGINT stops it (exit 0). The options are export_opts.py's."""

from __future__ import annotations

import argparse
import asyncio
import errno
import signal
import socket

from gpumem_tui.cli.errors import UsageError, crashed, endpoints_need_live, one_line, report
from gpumem_tui.cli.export_opts import Listen
from gpumem_tui.cli.export_sources import Stepped, SteppedDemo, SteppedReplay, live_feed
from gpumem_tui.cli.node_plan import build_judge
from gpumem_tui.demo import load_scenario
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.export.evaluation import Evaluator
from gpumem_tui.export.limits import Limits
from gpumem_tui.export.listener import Address, resolve
from gpumem_tui.export.server import ExportServer, serve
from gpumem_tui.sources.feed import Feed
from gpumem_tui.sources.nvml import NvmlSource
from gpumem_tui.text import literal


def run(args: argparse.Namespace) -> int:
    endpoints_need_live(args, "export")
    if args.at is not None and args.demo is None and args.replay is None:
        raise UsageError("--at needs --demo or --replay")
    if args.answer_timeout < args.request_timeout:
        raise UsageError(
            f"--answer-timeout {args.answer_timeout:g} is under --request-timeout {args.request_timeout:g}: a "
            "connection is answered after its request is in"
        )
    address = _address(args.listen)
    if not args.allow_remote and not address.loopback:
        raise UsageError(
            f"--listen {args.listen} is reachable from other machines (it binds {address.host}): add "
            "--allow-remote to serve there (docs/export.md says what it exposes)"
        )
    judge = build_judge(args)
    asyncio.run(_export(args, judge, address))
    return 0


def _address(listen: Listen) -> Address:
    """The one address `--listen` binds, resolved as the server binds it (so `*` is every interface)."""
    try:
        return resolve(listen.host, listen.port)
    except (socket.gaierror, UnicodeError) as exc:
        raise UsageError(f"--listen {listen}: {exc}") from None


async def _export(args: argparse.Namespace, judge: Judge, address: Address) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for name in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(name, stop.set)
    feed, nvml = _feed(args, judge)
    evaluator = Evaluator(feed, judge, _Said().failed)
    try:
        server = _serve(evaluator, args, address)
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


def _serve(evaluator: Evaluator, args: argparse.Namespace, address: Address) -> ExportServer:
    try:
        limits = Limits(args.max_connections, request_s=args.request_timeout, answer_s=args.answer_timeout)
        return serve(evaluator, address, args.top_processes, limits)
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

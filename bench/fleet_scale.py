"""The fleet's one-shot commands over a very large fleet: peak memory and CPU time of `fleet check` and
`fleet snapshot` against a loopback query API that answers 10,000 to 200,000 series per GPU query.

The server (tests/sources/prometheus/query_api.py) answers each of the fleet's queries with `fleet --demo`'s
answer copied until its per-GPU answer holds about N series, every copy another node with its own GPUs, pods
and addresses: 80,000 series is a fleet of about 10,000 nodes. Each command runs in a subprocess and is waited
for with `os.wait4`, so its own peak RSS (ru_maxrss) and CPU time (user + system) are read, not the bench's.
With --hostile, the same commands run against each corrupt answer of the robustness tests instead.

With --hostile --upstream, a real Prometheus holding the tests' fleet answers, and the spoilings that rewrite an
answer are made of its own (the server then proxies: query_api.Api's upstream); the others are served as before.

Run: python3 bench/fleet_scale.py [--series 10000 50000 80000 200000] [--commands check snapshot] [--hostile
[--upstream]]
Nothing is asserted: it is measured (the tests assert what does not depend on the machine's speed)."""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.sources.prometheus.query_api, from a checkout

from tests.sources.prometheus.conftest import AT  # noqa: E402
from tests.sources.prometheus.hostile_answers import HOSTILE  # noqa: E402
from tests.sources.prometheus.query_api import Api, gpu_series, serving  # noqa: E402

COMMANDS = {"check": ["fleet", "check"], "snapshot": ["fleet", "snapshot"]}
TIMEOUT_S = 300


def measure(argv: list[str]) -> tuple[int, float, float, float, str]:
    """(exit code, wall s, CPU s, peak RSS MB, last line of stderr) of `gpumem-tui ARGV` run alone (killed
    after TIMEOUT_S)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryFile() as err:
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "gpumem_tui", *argv], stdout=subprocess.DEVNULL, stderr=err, env=env
        )
        timer = threading.Timer(TIMEOUT_S, process.kill)
        timer.start()
        _, status, usage = os.wait4(process.pid, 0)  # this child's own peak RSS and CPU
        timer.cancel()
        wall = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
    return process.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, (lines or [""])[-1]


def serve(case: str, urls: multiprocessing.Queue, upstream: str | None = None) -> None:
    """The query API of one case (a hostile answer's name, or a number of series) until killed: in a process
    of its own, so the commands' peak RSS is not the server's (a child forked from a process starts as big)."""
    made = HOSTILE[case]() if case in HOSTILE else {"copies": max(1, int(case) // gpu_series())}
    if upstream is not None and "corrupt" in made:
        made["upstream"] = upstream
    with serving(Api(**made)) as url:
        urls.put(url)
        threading.Event().wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, nargs="+", default=[10_000, 50_000, 80_000, 200_000])
    parser.add_argument("--commands", nargs="+", choices=sorted(COMMANDS), default=sorted(COMMANDS))
    parser.add_argument("--hostile", action="store_true", help="each corrupt answer instead of the scales")
    parser.add_argument("--upstream", action="store_true", help="with --hostile: spoil a real Prometheus's answers")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        upstream = stack.enter_context(_real_prometheus()) if args.hostile and args.upstream else None
        return _run(args, upstream)


@contextlib.contextmanager
def _real_prometheus() -> Iterator[str]:
    """A real Prometheus holding the tests' fleet (tests/sources/prometheus/conftest.py); yields its URL."""
    from tests.sources.prometheus.conftest import fleet_text
    from tests.sources.prometheus.server import backfill, running

    with tempfile.TemporaryDirectory() as where, running(backfill(fleet_text(), Path(where))) as url:
        yield url


def _run(args: argparse.Namespace, upstream: str | None) -> int:
    cases = list(HOSTILE) if args.hostile else [str(n) for n in args.series]
    spawn = multiprocessing.get_context("spawn")
    print(f"{'answer':<22} {'command':<9} {'exit':>4} {'wall s':>7} {'CPU s':>7} {'peak MB':>8}  last line")
    for case in cases:
        urls: multiprocessing.Queue = spawn.Queue()
        server = spawn.Process(target=serve, args=(case, urls, upstream), daemon=True)
        server.start()
        url = urls.get(timeout=TIMEOUT_S)
        name = case if case in HOSTILE else f"{int(case):,} series"
        for command in args.commands:
            at = ["--at", str(AT)] if upstream is not None else []
            code, wall, cpu, rss, said = measure([*COMMANDS[command], "--prometheus", url, *at])
            print(f"{name:<22} {command:<9} {code:>4} {wall:>7.1f} {cpu:>7.1f} {rss:>8.0f}  {said[:70]}", flush=True)
        server.kill()
        server.join()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Where a node's samples come from, as `snapshot`, `check`, `export` and the TUI take it: --demo, --replay,
--prometheus (one of them at most; none is this node), --endpoint (engines to scrape beside), and the moment
to read. Written once here; each command says in its help what the source is to it."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.planargs import seconds
from gpumem_tui.demo.shipped import DEFAULT_SCENARIO, scenario_names

Options = argparse.ArgumentParser | argparse._ArgumentGroup


def add_sources(options: Options, demo: str, replay: str, prometheus: str | None = None) -> None:
    """--demo [SCENARIO] | --replay FILE [| --prometheus URL, where `prometheus` says what it is].
    `demo` completes "a simulated node": `{default}` in it is the default scenario, `{shipped}` the list."""
    source = options.add_mutually_exclusive_group()
    shipped = ", ".join(scenario_names())
    source.add_argument(
        "--demo",
        nargs="?",
        const=DEFAULT_SCENARIO,
        metavar="SCENARIO",
        help="a simulated node" + demo.format(default=DEFAULT_SCENARIO, shipped=shipped),
    )
    source.add_argument("--replay", metavar="FILE", help=replay)
    if prometheus is not None:
        source.add_argument("--prometheus", metavar="URL", help=prometheus)


def add_endpoint(options: Options, also: str = "") -> None:
    """--endpoint URL, repeatable: an engine scraped as it answers now (`also`: where else it is taken)."""
    options.add_argument(
        "--endpoint", action="append", default=[], metavar="URL", help=f"an engine endpoint (live{also})"
    )


def add_moment(parser: argparse.ArgumentParser, at: str, in_seconds: bool = True) -> None:
    """--at, the moment to read (`at` says where it is to the command; `in_seconds`: parsed as seconds here,
    else by the command), and --seed of the simulated node."""
    parsed: dict = {"type": seconds()} if in_seconds else {}
    parser.add_argument("--at", metavar="SECONDS", help=at, **parsed)
    parser.add_argument("--seed", type=int, help="seed of the simulated node (default: the scenario's)")

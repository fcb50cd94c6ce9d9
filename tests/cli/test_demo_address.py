"""A demo engine shows one address everywhere (issue 26, point 8): `check --demo`, `snapshot --demo` (text and
JSON), the scenario's intro and the TUI on the same demo all name the address the scenario declares, never the
mock server's ephemeral port (docs/design/app.md)."""

from __future__ import annotations

import asyncio
import json
import re

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.cli import build_parser, main
from gpumem_tui.cli.node_plan import build_judge
from gpumem_tui.cli.tui_cmd import build_feed
from gpumem_tui.demo import load_scenario
from tests.app.screen_text import screen_text
from tests.app.waiting import until

PORT = re.compile(r"127\.0\.0\.\d+:(\d+)|:(\d{4,5})\b")
"""An address with its port, or a port said alone (`:8003`), as a line may shorten it."""


def _ports(text: str) -> set[int]:
    return {int(a or b) for a, b in PORT.findall(text)}


def _declared(name: str) -> set[int]:
    return {engine.port for engine in load_scenario(name).engines}


async def _cli(capsys, *argv: str) -> str:
    """A one-shot command's output (in a thread: it runs its own event loop)."""
    await asyncio.to_thread(main, list(argv))
    return capsys.readouterr().out


async def _tui_screen(*argv: str) -> tuple[str, str]:
    """The TUI exactly as `gpumem-tui ARGV` builds it (its feed on the wall clock, real mock servers): its
    intro and its screen once the engines answered."""
    args = build_parser().parse_args(list(argv))
    feed = build_feed(args)
    app = GpuMemApp(feed, build_judge(args), poll=False, clock=lambda: feed.node.timestamp)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await until(
            pilot, lambda: app.node.sample is not None and all(e.state == "ok" for e in app.node.sample.engines)
        )
        await pilot.pause()
        return feed.intro or "", "\n".join(screen_text(app))


async def test_check_snapshot_and_the_tui_show_the_declared_address(capsys):
    declared = _declared("kv-pressure")
    assert declared == {8000}
    check = await _cli(capsys, "check", "--demo", "kv-pressure")
    snapshot = await _cli(capsys, "snapshot", "--demo", "kv-pressure")
    as_json = await _cli(capsys, "snapshot", "--demo", "kv-pressure", "--json")
    _intro, screen = await _tui_screen("--demo", "kv-pressure")
    for said in (check, snapshot, as_json, screen):
        assert "http://127.0.0.1:8000" in said or ":8000" in said
        assert _ports(said) == declared, said
    engine = json.loads(as_json)["engines"][0]
    assert engine["url"] == "http://127.0.0.1:8000" and {r["endpoint"] for r in engine["records"]} == {engine["url"]}


async def test_the_intro_and_the_screen_name_the_same_engines(capsys):
    """busy-node's description names its busiest engine by port 8003: the screen shows that port, and no other
    than the four the scenario declares."""
    intro, screen = await _tui_screen("--demo", "busy-node")
    assert "port 8003" in intro and ":8003" in screen
    assert _ports(screen) <= _declared("busy-node") == {8000, 8001, 8002, 8003}
    check = await _cli(capsys, "check", "--demo", "busy-node")
    assert ":8003" in check and _ports(check) <= _declared("busy-node")

"""The TUI's demo shows each engine at an address `gpumem-tui metrics` reaches while the demo runs."""

from __future__ import annotations

import asyncio
import json

from gpumem_tui.cli import build_parser, main
from gpumem_tui.cli.tui_cmd import build_feed


def test_the_tui_demo_shows_an_engine_address_that_metrics_reaches(capsys):
    feed = build_feed(build_parser().parse_args(["--demo", "healthy-8b", "--speed", "2000"]))

    async def shown_and_read() -> tuple[list[str], int]:
        try:
            await feed.sample()
            await asyncio.sleep(0.1)  # 200 simulated seconds: the engine has loaded and serves
            urls = [e.url for e in (await feed.sample()).engines]
            return urls, await asyncio.to_thread(main, ["metrics", urls[0], "--json"])
        finally:
            await feed.aclose()

    urls, code = asyncio.run(shown_and_read())
    assert urls == [server.url for server in feed.servers.values()]
    assert code == 0 and json.loads(capsys.readouterr().out)[0]["model"] == "meta-llama/Llama-3.1-8B-Instruct"

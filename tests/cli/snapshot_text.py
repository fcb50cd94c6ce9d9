"""`snapshot`'s text as a terminal of a given width shows it: one sample of a demo scenario at a moment."""

from __future__ import annotations

import asyncio
import io

from rich.console import Console

from gpumem_tui.cli.snapshot_view import render
from gpumem_tui.demo import ManualClock
from gpumem_tui.demo.feed import DemoFeed


def snapshot_lines(scenario: str, at: float, width: int) -> list[str]:
    async def one():
        feed = DemoFeed(scenario, ManualClock(at))
        sample = await feed.sample()
        await feed.aclose()
        return sample

    out = Console(file=io.StringIO(), width=width, markup=False, highlight=False, color_system=None)
    render(asyncio.run(one()), out, "here")
    return out.file.getvalue().splitlines()

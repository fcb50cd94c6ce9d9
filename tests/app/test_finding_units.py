"""One quantity, one unit on one screen: the findings (the line under the header, the findings panel) speak
in the unit the plan table and the bars use, and `g` switches them with the rest."""

from __future__ import annotations

import re

from tests.app.conftest import run_to
from tests.app.screen_text import screen_text

IN = {"GB": re.compile(r"\d GB\b"), "GiB": re.compile(r"\d GiB\b")}
NOTEBOOK_BYTES = 12 * 2**30
"""What the notebook holds 45 s into noisy-neighbour (catalog/scenarios/noisy-neighbour.toml)."""


def _said(lines: list[str], unit: str) -> None:
    other = "GiB" if unit == "GB" else "GB"
    screen = "\n".join(lines)
    assert IN[unit].search(screen) and not IN[other].search(screen), screen


async def test_g_switches_the_findings_words_with_the_plan_table(make_app):
    app = make_app("noisy-neighbour", 0)
    async with app.run_test(size=(120, 48)) as pilot:
        await run_to(app, pilot, 45)
        in_gb = screen_text(app)
        await pilot.press("g")
        await pilot.pause()
        in_gib = screen_text(app)
        await pilot.press("g")
        await pilot.pause()
        back = screen_text(app)
    _said(in_gb, "GB")
    _said(in_gib, "GiB")
    assert back == in_gb
    held_gb, held_gib = f"{NOTEBOOK_BYTES / 10**9:.2f} GB", f"{NOTEBOOK_BYTES / 2**30:.2f} GiB"
    assert f"holds {held_gb}" in in_gb[1] and f"holds {held_gib}" in in_gib[1]
    table = next(line for line in in_gb if "other processes" in line)
    assert f"{NOTEBOOK_BYTES / 10**9:.1f} GB" in table

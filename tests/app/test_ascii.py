"""`--ascii`, and a terminal that does not encode UTF-8, draw bars, gauges and sparklines in ASCII."""

from __future__ import annotations

import html
import io
import re

import pytest

from gpumem_tui.cli import build_parser
from gpumem_tui.cli.tui_cmd import build_app
from gpumem_tui.glyphs import ASCII, TO_ASCII, UNICODE, for_terminal
from tests.app.conftest import run_to

SIZES = [(80, 24), (160, 48)]


def screen_text(app) -> str:
    """The characters on the screen, read back from Textual's own screenshot."""
    cells = re.findall(r"<text[^>]*>(.*?)</text>", app.export_screenshot(), re.S)
    return "\n".join(html.unescape(c).replace("\xa0", " ") for c in cells)


def widget_text(app) -> str:
    """What the app itself draws: every GPU card and engine card."""
    return "\n".join(str(w.render()) for w in app.screen.query("GpuCard, EngineCard"))


STORY = {"healthy-8b": (240, 300), "gpu-lost": (60, 75), "noisy-neighbour": (40, 55)}
"""Where each scenario is drawn: from its start to the moment its story shows (engines still holding memory)."""


@pytest.mark.parametrize("scenario", list(STORY))
@pytest.mark.parametrize("size", SIZES, ids=["80x24", "160x48"])
async def test_ascii_draws_the_demo_in_ascii(make_app, scenario, size):
    start, story = STORY[scenario]
    app = make_app(scenario, at=start, glyphs=ASCII)
    async with app.run_test(size=size) as pilot:
        await run_to(app, pilot, story)
        drawn = widget_text(app)
        # full cards ("measured", "history") or, when several GPUs fold, one bar line each ("GPU 0 ###", or
        # "GPU 0 18:00.0 ###" where the line has room for the bus id)
        assert ("measured" in drawn and "history" in drawn) or re.search(r"GPU 0 (18:00\.0 )?#", drawn)
        assert "#" in drawn
        assert drawn.isascii(), sorted({c for c in drawn if not c.isascii()})
        # What Textual draws around it (scrollbars, borders) degrades at the terminal: each has a twin.
        assert {c for c in screen_text(app) if not c.isascii()} <= set(TO_ASCII)


async def test_unicode_is_the_default_and_uses_block_characters(make_app):
    app = make_app("healthy-8b", at=240)
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 300)
        assert app.glyphs is UNICODE and "█" in widget_text(app)


async def test_the_help_legend_shows_the_characters_the_bars_use(make_app):
    app = make_app("healthy-8b", at=240, glyphs=ASCII)
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 300)
        await pilot.press("question_mark")
        await pilot.pause()
        legend = str(app.screen.query_one("#help-text").render())
        assert "# engine, = other" in legend and "~ KV pool" in legend and legend.isascii()


class _Stream(io.StringIO):
    def __init__(self, encoding: str):
        super().__init__()
        self._encoding = encoding

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding


def test_the_flag_or_a_terminal_that_is_not_utf8_chooses_ascii():
    assert build_app(build_parser().parse_args(["--demo", "--ascii"])).glyphs is ASCII
    assert for_terminal(False, _Stream("utf-8")) is UNICODE
    assert for_terminal(True, _Stream("utf-8")) is ASCII
    assert for_terminal(False, _Stream("ascii")) is ASCII
    assert for_terminal(False, _Stream("ANSI_X3.4-1968")) is ASCII  # what LC_ALL=C names it


def test_every_unicode_glyph_has_an_ascii_twin():
    """A bar printed through an ASCII locale reads as the same bar drawn with --ascii."""
    assert {TO_ASCII[UNICODE.fill[kind]] for kind in UNICODE.fill} == set(ASCII.fill.values())
    assert all(TO_ASCII[UNICODE.fill[kind]] == ASCII.fill[kind] for kind in UNICODE.fill)
    assert all(TO_ASCII[c].isascii() for c in UNICODE.levels) and all(v.isascii() for v in TO_ASCII.values())
    # Kinds told apart by character stay apart in ASCII, as they are without colour.
    assert len(set(ASCII.fill.values())) == len(set(UNICODE.fill.values()))

"""What each terminal size shows first: the verdict in one line at every size, the header's state flags
before anything optional, one line per GPU when full cards would fill the screen, the bars given the width
and the findings the rows."""

from __future__ import annotations

import asyncio
import io
from contextlib import redirect_stdout

from gpumem_tui.app.widgets.findings_panel import FindingsPanel
from gpumem_tui.app.widgets.gpu_card import GpuCard
from gpumem_tui.app.widgets.status_line import StatusLine
from gpumem_tui.cli import main
from tests.app.conftest import refresh, run_to
from tests.app.screen_text import screen_text


async def check_summary(scenario: str, at: int) -> str:
    """What `check` says of the same moment, before its performance data (run in a thread: `check` runs its
    own event loop)."""
    out = io.StringIO()
    with redirect_stdout(out):
        await asyncio.to_thread(main, ["check", "--demo", scenario, "--at", str(at)])
    line = out.getvalue().splitlines()[0]
    return line.split(" | ")[0]


async def test_the_status_line_says_what_check_says_at_80x24(make_app):
    app = make_app("noisy-neighbour", 40)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_to(app, pilot, 55)
        lines = screen_text(app)
    said = await check_summary("noisy-neighbour", 55)
    head = "CRITICAL - other process on GPU 0: python3 pid 3100 holds "
    assert said == head + "20.00 GiB beside the engine; also 1 critical"
    # the second line of the terminal, under the header, is check's own words (sizes in the screen's unit)
    assert lines[1].strip() == head + "21.47 GB beside the…"
    # and the findings panel lists them in check's order: the headline (the notebook) first
    first = lines[next(i for i, line in enumerate(lines) if line.strip() == "Findings") + 1]
    assert first.strip().startswith("CRITICAL") and "python3 pid 3100" in first


async def test_the_header_keeps_its_state_flags_at_80_columns(make_app, tmp_path):
    app = make_app("healthy-8b", 240)
    app.node.record_path = str(tmp_path / "a-long-recording-name.jsonl")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_to(app, pilot, 300)
        await pilot.press("space")
        await pilot.pause()
        header = screen_text(app)[0]
    assert "PAUSED" in header and "REC " in header and " GB " in header, header
    assert "demo healthy-8b" in header


async def test_eight_gpus_at_80x24_take_a_line_each_and_enter_opens_one(make_app):
    app = make_app("busy-node", 240)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_to(app, pilot, 300)
        lines = screen_text(app)
        rows = [line.strip() for line in lines if line.strip().startswith("GPU ")]
        assert [row.split()[1] for row in rows] == [str(i) for i in range(8)]
        assert all(" / 85.5 GB" in row for row in rows), rows
        assert "as planned" in rows[0] and "1 warning" in rows[6]
        card = app.screen.query_one("#gpu-3", GpuCard)
        card.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert not card.compact and card.size.height > 5
        assert sum(c.compact for c in app.screen.query(GpuCard)) == 7
        text = "\n".join(screen_text(app))
        assert "plan (auto) vs measured" in text and "GPU 3 42:00.0 H100" in text
        await pilot.press("escape")
        await pilot.pause()
        assert card.compact


async def test_one_gpu_keeps_its_full_card_at_80x24(make_app):
    app = make_app("healthy-8b", 240)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_to(app, pilot, 300)
        assert not app.screen.query_one(GpuCard).compact


async def test_the_wide_layout_gives_the_bars_the_width_and_the_title_its_numbers(make_app):
    app = make_app("noisy-neighbour", 40)
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 55)
        lines = screen_text(app)
        findings = app.screen.query_one(FindingsPanel)
        assert findings.size.width >= 80  # not a 52-column strip
    title = next(line for line in lines if "GPU 0 18:00.0 H100" in line)
    assert "°C" in title and title.rstrip().endswith("W")
    measured = next(line for line in lines if line.strip().startswith("measured ██"))
    cells = len(measured.strip().split()[1])
    assert cells >= 100, measured


async def test_the_plan_bar_starts_where_the_measured_bar_does_at_every_width(make_app):
    """The driver's share is drawn after the engine's bands, as on the measured bar: no stray `░` first."""
    app = make_app("healthy-8b", 240)
    async with app.run_test(size=(100, 30)) as pilot:
        await run_to(app, pilot, 300)
        for width in (90, 100, 110, 130, 160, 200):
            await pilot.resize_terminal(width, 40)
            await pilot.pause()
            lines = screen_text(app)
            planned = next(line for line in lines if line.strip().startswith("auto "))
            measured = next(line for line in lines if line.strip().startswith("measured ██"))
            assert planned.strip().split()[1][0] == measured.strip().split()[1][0] == "█", (width, planned)


async def test_the_cpu_column_widens_when_a_share_grows(make_app):
    """The engine starts at a few percent and serves at 100 %: the column shows `100 %`, not `100`."""
    app = make_app("healthy-8b", 0)
    async with app.run_test(size=(160, 48)) as pilot:
        await refresh(app, pilot)
        assert any(" 6 %" in line for line in screen_text(app))
        app.demo_clock.set(300)
        await refresh(app, pilot)
        await refresh(app, pilot)
        assert any("100 %" in line for line in screen_text(app))


async def test_the_bars_legend_is_on_the_main_screen(make_app):
    app = make_app("healthy-8b", 240)
    async with app.run_test(size=(80, 40)) as pilot:
        await run_to(app, pilot, 300)
        text = "\n".join(screen_text(app))
    assert "▆ KV pool" in text and "█ weights" in text and "▓ other process" in text


async def test_the_status_line_follows_the_findings(make_app):
    """Healthy, the line says what check says when nothing needs a look or only info does."""
    app = make_app("healthy-8b", 240)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_to(app, pilot, 300)
        shown = str(app.screen.query_one(StatusLine).render())
    assert shown == await check_summary("healthy-8b", 300)

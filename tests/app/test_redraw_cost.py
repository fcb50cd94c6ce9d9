"""A refresh draws only what changed on screen: a widget whose shown content is the same is not drawn again,
and the screen is laid out again only when a widget's height can change (a layout measures and places every
widget: it cost more than the data collection, bench/tui_cpu.py)."""

from __future__ import annotations

import dataclasses

from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widget import Widget

from gpumem_tui.app.widgets import findings_panel, gpu_card
from gpumem_tui.app.widgets.engine_card import EngineCard
from gpumem_tui.app.widgets.findings_panel import FindingsPanel
from gpumem_tui.app.widgets.gpu_card import GpuCard
from gpumem_tui.app.widgets.header_bar import HeaderBar
from gpumem_tui.app.widgets.process_table import ProcessTable
from gpumem_tui.diagnosis.findings import Finding
from tests.app.conftest import refresh, run_to, text_of
from tests.app.screen_text import Terminal, screen_text


def watch_refreshes(widget) -> list[dict]:
    """The keyword arguments of each `refresh` asked of `widget` from now on, and its regions under `regions`
    where it names some (it still refreshes)."""
    asked: list[dict] = []
    refresh = widget.refresh

    def counted(*regions, **options):
        asked.append({**options, "regions": regions} if regions else options)
        return refresh(*regions, **options)

    widget.refresh = counted
    return asked


def warning(explanation: str) -> Finding:
    return Finding(
        severity="warning",
        code="kv_saturated",
        title="KV cache full on GPU 6,7",
        explanation=explanation,
        try_this="add capacity",
    )


class OnePanel(App[None]):
    def compose(self) -> ComposeResult:
        yield FindingsPanel()


async def test_findings_are_laid_out_again_only_when_their_height_changes():
    app = OnePanel()
    async with app.run_test(size=(60, 20)) as pilot:
        panel = app.query_one(FindingsPanel)
        panel.show([warning("KV cache 98.2 % full; 73 running, 9 waiting")], "")
        await pilot.pause()
        assert panel.size.height == 3
        asked = watch_refreshes(panel)
        panel.show([warning("KV cache 97.9 % full; 75 running, 8 waiting")], "")  # the same three lines
        await pilot.pause()
        assert asked == [{"regions": (Region(0, 1, 60, 1),)}]  # the explanation's row only, not laid out
        assert "75 running" in text_of(panel) and panel.size.height == 3
        longer = "KV cache 99.1 % full; 80 running, 12 waiting, 140.0 preemptions/min; " * 2
        panel.show([warning(longer)], "")
        await pilot.pause()
        assert asked[-1].get("layout") is True
        assert panel.size.height == 2 + len(
            panel.app.console.render_lines(longer, panel.app.console.options.update_width(51))
        )


async def test_a_findings_row_that_did_not_change_is_not_made_again(monkeypatch):
    """Each row is a one-row grid; a refresh makes a grid only for a row whose words changed."""
    app = OnePanel()
    async with app.run_test(size=(60, 20)) as pilot:
        panel = app.query_one(FindingsPanel)
        panel.show([warning("KV cache 98.2 % full; 73 running, 9 waiting")], "")
        await pilot.pause()
        made: list[list] = []
        grid = findings_panel._grid
        monkeypatch.setattr(findings_panel, "_grid", lambda rows, column=None: made.append(rows) or grid(rows, column))
        panel.show([warning("KV cache 97.9 % full; 75 running, 8 waiting")], "")
        await pilot.pause()
        assert [str(text) for [(_, text)] in made] == ["KV cache 97.9 % full; 75 running, 8 waiting"]


async def test_an_unchanged_finding_is_not_drawn_again():
    app = OnePanel()
    async with app.run_test(size=(60, 20)) as pilot:
        panel = app.query_one(FindingsPanel)
        panel.show([warning("KV cache 98.2 % full")], "")
        await pilot.pause()
        asked = watch_refreshes(panel)
        panel.show([warning("KV cache 98.2 % full")], "")
        await pilot.pause()
        assert asked == []


async def test_what_an_info_finding_does_not_show_draws_nothing():
    """An info finding shows its title only: its explanation's numbers (which change every second) are not
    drawn again."""
    app = OnePanel()
    async with app.run_test(size=(60, 20)) as pilot:
        panel = app.query_one(FindingsPanel)
        info = warning("flat over the last 2 s").model_copy(update={"severity": "info", "title": "free memory low"})
        panel.show([info], "")
        await pilot.pause()
        asked = watch_refreshes(panel)
        panel.show([info.model_copy(update={"explanation": "flat over the last 3 s"})], "")
        await pilot.pause()
        assert asked == []


async def test_an_engine_card_renders_again_only_the_lines_that_changed(make_app):
    """Its gauge's numbers change: the gauge's row alone is rendered and repainted; a note that wraps onto
    one more row lays the card out again, so its last line (the KV history) is not cut off."""
    app = make_app("busy-node")
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 300, step=10, span=20)
        card = app.screen.query(EngineCard).first()
        view = app.node_screen.view.judged.engines[0]
        usage = view.record.kv_usage_fraction
        asked, rendered = watch_refreshes(card), []
        rows = card._rows
        card._rows = lambda *args: rendered.append(args[1]) or rows(*args)
        fuller = view.record.model_copy(update={"kv_usage_fraction": 0.5 if usage != 0.5 else 0.6})
        card.show(dataclasses.replace(view, record=fuller))
        await pilot.pause()
        assert [str(line).split("%")[0] for line in rendered] == [str(card.content.gauge).split("%")[0]]
        (_, title), (_, gauge) = card._rendered.lines[:2]  # each line's rows: the title wraps at this width
        assert asked == [{"regions": (Region(0, len(title), card.size.width, len(gauge)),)}]
        height = card.size.height
        noted = fuller.model_copy(update={"notes": ["a note " * (card.size.width // 7 + 1)]})
        card.show(dataclasses.replace(view, record=noted))
        await pilot.pause()
        assert asked[-1].get("layout") is True
        assert card.size.height == height + 2  # the note, on two rows
        assert "KV history" in card.render_line(card.size.height - 1).text


async def test_a_one_line_gpu_is_not_drawn_again_for_what_its_line_does_not_show(make_app):
    app = make_app("busy-node")
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 300, step=10, span=20)
        card = app.screen.query_one("#gpu-0", GpuCard)
        assert card.compact  # eight GPUs at 48 rows: one line each
        view, unit = app.node_screen.view.judged.gpus[0], app.node.unit
        asked = watch_refreshes(card)
        hotter = dataclasses.replace(view, gpu=view.gpu.model_copy(update={"temperature_c": 99}))
        card.show(hotter, unit)  # the temperature is in the full card's title, not on its line
        await pilot.pause()
        assert asked == []
        card.compact = False  # opened, the card draws its newest title
        await pilot.pause()
        assert "99°C" in card.render().plain
        fuller = dataclasses.replace(hotter, gpu=hotter.gpu.model_copy(update={"memory_used_bytes": 80 * 10**9}))
        card.show(fuller, unit)
        await pilot.pause()
        assert asked[-1] == {}  # drawn again, not laid out


async def test_a_one_line_gpu_builds_only_what_its_line_shows(make_app, monkeypatch):
    """Eight GPUs at 48 rows are one line each: a refresh builds no card's title, plan table or history,
    which its line does not show; a card that opens builds them at once, from the newest sample."""
    app = make_app("busy-node", at=270)
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 290, step=10, span=20)
        built: list[str] = []
        for name in ("_title", "_compare_cells", "history_levels"):
            original = getattr(gpu_card, name)
            monkeypatch.setattr(gpu_card, name, lambda *args, f=original, n=name: built.append(n) or f(*args))
        app.demo_clock.set(300)
        await refresh(app, pilot)
        assert all(card.compact for card in app.screen.query(GpuCard)) and built == []
        card = app.screen.query_one("#gpu-0", GpuCard)
        card.compact = False
        await pilot.pause()
        assert sorted(built) == ["_compare_cells", "_title", "history_levels"]
        newest = app.node.sample.gpus[0]
        assert f"{newest.power_w:.0f}W" in card.render().plain.split("\n")[0]  # the title, from the newest sample


async def test_a_repaint_below_the_fold_does_not_place_every_widget_again(make_app):
    """The process table below the fold changes most seconds. Textual took a repaint of a widget it does not
    show for a new widget and placed every widget again at the next question of any widget's size; a layout
    or a scroll still places them (the table scrolled into view draws its rows)."""
    app = make_app("busy-node")
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 300, step=10, span=20)
        compositor, table = app.screen._compositor, app.screen.query_one(ProcessTable)
        assert table not in compositor.visible_widgets  # below the fold at 48 rows
        placed: list[bool] = []
        arrange = compositor._arrange_root
        compositor._arrange_root = lambda *args, **kw: placed.append(True) or arrange(*args, **kw)
        table.refresh()
        await pilot.pause()
        app.screen.query_one(HeaderBar).refresh()  # a whole repaint asks the widget's size
        await pilot.pause()
        assert placed == []
        app.screen.query_one("#body").scroll_end(animate=False)
        await pilot.pause()
        assert table in compositor.visible_widgets
        pid = str(app.node.sample.processes[0].pid)
        assert any(pid in line for line in screen_text(app))


async def test_the_terminal_after_a_minute_of_refreshes_shows_the_screen_composed_afresh(make_app):
    """Each refresh sends only the rows that changed (lines, cards, the clock); what the terminal then holds,
    frame over frame, is what Textual composes from the widgets as they are."""
    app = make_app("busy-node")
    terminal = Terminal(app)
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 300, step=1, span=60)
        assert terminal.lines() == screen_text(app)


async def test_a_refresh_restyles_no_widget_of_ours_for_links(make_app, monkeypatch):
    """Our widgets show no links (outside text is literal, never markup): Textual does not work out a link
    style for each row they render."""
    app = make_app("busy-node", at=270)
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 290, step=10, span=20)
        asked: list[str] = []
        link_style = Widget.link_style.fget
        monkeypatch.setattr(Widget, "link_style", property(lambda w: asked.append(type(w).__module__) or link_style(w)))
        app.demo_clock.set(300)
        await refresh(app, pilot)
        assert not [module for module in asked if module.startswith("gpumem_tui")]


async def test_a_frame_renders_only_the_widgets_its_repainted_rows_cross(make_app, monkeypatch):
    """The clock in the header (the top row) and an engine card (near the bottom) change: the frame renders
    them and the containers they lie in, not the GPU cards or the legend between them (Textual rendered every
    widget in the rows' bounding box, which the clock made the whole screen)."""
    app = make_app("busy-node")
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 300, step=10, span=20)
        rendered: list[str] = []
        render_lines = Widget.render_lines
        monkeypatch.setattr(
            Widget, "render_lines", lambda w, crop: rendered.append(type(w).__name__) or render_lines(w, crop)
        )
        app.screen.query_one(HeaderBar).refresh()
        app.screen.query(EngineCard).last().refresh()
        await pilot.pause()
        assert {"HeaderBar", "EngineCard"} <= set(rendered)
        assert not {"GpuCard", "BarLegend", "FindingsPanel"} & set(rendered)


async def test_the_screen_keeps_its_cards_as_engines_come_and_go(make_app):
    """The screen hands its cards their content without looking them up each second: an engine that goes
    takes its card with it, none left says so, and engines that come back get cards again."""
    app = make_app("busy-node")
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 300, step=10, span=20)
        screen, view = app.screen, app.node_screen.view
        judged = view.judged
        for engines in (judged.engines[:1], [], judged.engines):
            screen.show(dataclasses.replace(view, judged=dataclasses.replace(judged, engines=engines)))
            await pilot.pause()
            models = [card.content.title.plain.split("  ")[1] for card in screen.query(EngineCard)]
            assert models == [engine.record.model for engine in engines]
            assert bool(screen.query(".empty")) == (not engines)
        assert "No engine endpoint found" not in " ".join(screen_text(app))


async def test_a_process_table_whose_processes_did_not_change_is_not_looked_at_again(make_app):
    """The same processes in the same unit and order: no cell is built or compared; one process's memory
    grows: that cell alone is rewritten."""
    app = make_app("busy-node")
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 300, step=10, span=20)
        table, judged = app.screen.query_one(ProcessTable), app.node_screen.view.judged
        processes = judged.sample.processes
        looked, written = [], []
        get_cell, update_cell = table.get_cell, table.update_cell
        table.get_cell = lambda *args: looked.append(args) or get_cell(*args)
        table.update_cell = lambda *args, **kw: written.append(args[:2]) or update_cell(*args, **kw)
        table.show(list(processes), set(judged.engine_pids), "GB")
        assert looked == [] and written == []
        top = max(processes, key=lambda p: p.gpu_memory_bytes or 0)
        grown = [
            p.model_copy(update={"gpu_memory_bytes": p.gpu_memory_bytes + 10**9}) if p is top else p for p in processes
        ]
        table.show(grown, set(judged.engine_pids), "GB")
        assert written == [(f"{top.pid}:{top.gpu_index}", "GPU memory")]


async def test_the_lines_that_changed_are_repainted_in_one_refresh(make_app):
    """An engine card's gauge and stats change together: one repaint names both rows."""
    app = make_app("busy-node")
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 300, step=10, span=20)
        card = app.screen.query(EngineCard).first()
        view = app.node_screen.view.judged.engines[0]
        record = view.record
        busier = record.model_copy(
            update={
                "kv_usage_fraction": 0.5 if record.kv_usage_fraction != 0.5 else 0.6,
                "requests_running": (record.requests_running or 0) + 7,
            }
        )
        asked = watch_refreshes(card)
        card.show(dataclasses.replace(view, record=busier))
        await pilot.pause()
        [(_, title), (_, gauge), (_, stats), *_] = card._rendered.lines
        assert asked == [
            {
                "regions": (
                    Region(0, len(title), card.size.width, len(gauge)),
                    Region(0, len(title) + len(gauge), card.size.width, len(stats)),
                )
            }
        ]

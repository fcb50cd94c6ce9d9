"""`g` switches every size on the single-node screens between GB (10^9) and GiB (2^30): the monitor's
process table (host RSS with GPU memory), and the details and forensics sheets opened over it, redrawn
when `g` is pressed while they are open. The expected numbers are computed here from the bytes the
simulated node is told to hold (catalog/scenarios/noisy-neighbour.toml), to the one decimal shown."""

from __future__ import annotations

from gpumem_tui.app.screens.details import DetailsScreen
from gpumem_tui.app.screens.forensics import ForensicsScreen
from gpumem_tui.app.screens.main import MainScreen
from gpumem_tui.app.widgets.process_table import ProcessTable
from tests.app.conftest import run_to, settle, text_of

NOTEBOOK_PID = 3100
NOTEBOOK_BYTES = 20 * 2**30
"""The notebook's GPU memory: `memory_gib = 20` in the scenario."""
NOTEBOOK_RSS_BYTES = 6 * 2**30
"""The notebook's host RSS: `host_rss_gib = 6`."""


def gb(n_bytes: int) -> str:
    return f"{n_bytes / 10**9:,.1f} GB"


def gib(n_bytes: int) -> str:
    return f"{n_bytes / 2**30:,.1f} GiB"


def words(widget) -> str:
    return " ".join(text_of(widget).split())


async def _forensics_text(app, pilot) -> str:
    await app.screen.workers.wait_for_complete()
    await pilot.pause()
    return words(app.screen.query_one("#forensics-text"))


def _notebook_row(text: str) -> str:
    """The notebook's row (GPU, pid, name, from, to, growth) in the table of who grew before the first
    critical finding."""
    grew = text[text.index("Who grew") :]
    start = grew.index(f" 0 {NOTEBOOK_PID} python3 ")
    return grew[start : grew.index("unexpected", start)].strip()


async def test_g_on_the_forensics_sheet_redraws_its_sizes_in_the_other_unit(make_app):
    app = make_app("noisy-neighbour", at=0)
    async with app.run_test(size=(160, 60)) as pilot:
        await run_to(app, pilot, 300, step=10, span=300)
        total = app.node.sample.gpus[0].memory_total_bytes
        assert app.node.unit == "GB"
        await pilot.press("f")
        assert isinstance(app.screen, ForensicsScreen)
        in_gb = await _forensics_text(app, pilot)
        await pilot.press("g")
        await pilot.pause()
        in_gib = words(app.screen.query_one("#forensics-text"))
        await pilot.press("g")
        await pilot.pause()
        back = words(app.screen.query_one("#forensics-text"))
        assert isinstance(app.screen, ForensicsScreen)  # `g` switches, it does not close the sheet
    assert f"of {gb(total)}" in in_gb
    assert _notebook_row(in_gb) == f"0 {NOTEBOOK_PID} python3 {gb(0)} {gb(NOTEBOOK_BYTES)} +{gb(NOTEBOOK_BYTES)}"
    assert f"of {gib(total)}" in in_gib
    assert _notebook_row(in_gib) == f"0 {NOTEBOOK_PID} python3 {gib(0)} {gib(NOTEBOOK_BYTES)} +{gib(NOTEBOOK_BYTES)}"
    assert back == in_gb


async def test_forensics_opens_in_the_unit_chosen_on_the_monitor_and_g_there_reaches_the_monitor(make_app):
    app = make_app("noisy-neighbour", at=0)
    async with app.run_test(size=(160, 60)) as pilot:
        await run_to(app, pilot, 300, step=10, span=300)
        await pilot.press("g")
        await pilot.press("f")
        text = await _forensics_text(app, pilot)
        await pilot.press("g")  # back to GB, from the sheet
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, MainScreen)
        header = text_of(app.screen.query_one("#header"))
    assert _notebook_row(text).endswith(f"+{gib(NOTEBOOK_BYTES)}")
    assert app.node.unit == "GB" and " GB" in header and "GiB" not in header


async def test_the_process_tables_host_rss_follows_g_with_its_gpu_memory(make_app):
    app = make_app("noisy-neighbour", at=45)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one(ProcessTable)

        def notebook() -> tuple[str, str]:
            row = table.get_row(f"{NOTEBOOK_PID}:0")
            return row[3].plain, row[4].plain  # GPU memory, host RSS

        in_gb = notebook()
        await pilot.press("g")
        await pilot.pause()
        in_gib = notebook()
    assert in_gb[0].endswith(" GB") and in_gb[1] == gb(NOTEBOOK_RSS_BYTES)
    assert in_gib[0].endswith(" GiB") and in_gib[1] == gib(NOTEBOOK_RSS_BYTES)


async def test_g_on_the_details_sheet_redraws_its_sizes_in_the_other_unit(make_app):
    app = make_app("noisy-neighbour", at=45)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        total = app.node.sample.gpus[0].memory_total_bytes
        await pilot.press("enter")
        assert isinstance(app.screen, DetailsScreen)
        in_gb = words(app.screen.query_one("#details-text"))
        await pilot.press("g")
        await pilot.pause()
        in_gib = words(app.screen.query_one("#details-text"))
        assert isinstance(app.screen, DetailsScreen)
    assert f"memory_total_bytes {total / 10**9:,.2f} GB ({total:,} bytes)" in in_gb
    assert f"memory_total_bytes {total / 2**30:,.2f} GiB ({total:,} bytes)" in in_gib


async def test_a_mig_instances_sizes_on_the_details_sheet_have_the_unit_and_follow_g(make_app):
    """A card in MIG mode lists its instances on the sheet: their memory was a bare count of bytes."""
    from gpumem_tui.app.widgets.gpu_card import GpuCard

    app = make_app("mig-node", at=60)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        [first, *_] = app.node.sample.gpus[0].mig_instances
        app.screen.query_one(GpuCard).focus()
        await pilot.press("enter")
        in_gb = words(app.screen.query_one("#details-text"))
        await pilot.press("g")
        await pilot.pause()
        in_gib = words(app.screen.query_one("#details-text"))
    used = first.memory_used_bytes
    assert f"memory_used_bytes {used / 10**9:,.2f} GB ({used:,} bytes)" in in_gb
    assert f"memory_used_bytes {used / 2**30:,.2f} GiB ({used:,} bytes)" in in_gib
    assert f"'memory_used_bytes': {used}" not in in_gb

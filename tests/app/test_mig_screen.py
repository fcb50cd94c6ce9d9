"""The TUI over the MIG node: slice processes by GPU, GPU instance and compute instance with their memory,
MPS clients beside their server, and a MIG card's missing utilization said plainly."""

from __future__ import annotations

from pathlib import Path

from gpumem_tui.app.widgets.gpu_card import SCALE, GpuCard
from gpumem_tui.app.widgets.process_table import ProcessTable
from tests.app.conftest import settle
from tests.app.screen_text import screen_text


async def test_the_process_table_names_gpu_and_compute_instances(make_app):
    app = make_app("mig-node", at=60)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one(ProcessTable)
        rows = {table.get_row_at(i)[0].plain: table.get_row_at(i) for i in range(table.row_count)}
        # the screen's default unit is GB (10^9): 22 GiB of the training job is 23.6 GB
        placed = {pid: (row[2].plain, row[3].plain) for pid, row in rows.items()}
        assert placed == {
            "3100": ("0:1.0", "23.6 GB"),
            "3200": ("0:1.1", "9.7 GB"),
            "3300": ("0:2.0", "11.8 GB"),
            "3400": ("1", "0.0 GB"),
            "3500": ("1", "19.3 GB"),
            "3600": ("1", "12.9 GB"),
        }


async def test_a_mig_card_says_its_utilization_is_not_reported(make_app):
    app = make_app("mig-node", at=60)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        mig, h100 = [str(card.render()) for card in app.screen.query(GpuCard)]
        assert "util n/a (MIG)" in mig and "util n/a" not in h100


async def test_a_mig_card_whose_own_memory_is_refused_draws_no_bar_past_its_end(make_app, tmp_path):
    """Without the MIG monitor privilege (a container) NVML refuses the card's own memory but lists each
    slice's processes with theirs: with no total to draw against, a bar of 45 GB over nothing ran off the card."""
    shipped = Path(__file__).resolve().parents[2] / "catalog" / "scenarios" / "mig-node.toml"
    user = tmp_path / "mig-user.toml"
    user.write_text("nvml_root = false\n" + shipped.read_text(encoding="utf-8"), encoding="utf-8")
    app = make_app(str(user), at=60)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        mig = app.screen.query(GpuCard).first()
        assert "n/a / n/a" in str(mig.render())
        assert sum(width for _name, _kind, width in mig.content.measured) <= SCALE
        assert not any("»" in line for line in screen_text(app))

"""History lines move every few samples and never average a peak away."""

from gpumem_tui.app.widgets.gpu_card import history_levels, spark


def test_each_cell_is_the_highest_reading_of_its_run():
    levels = history_levels([0, 0, 8, 0, 0, 1, 1, 1, 1, 1], ceiling=8, bucket=5)
    assert levels == (8, 1)


def test_the_oldest_run_is_the_short_one_so_cells_stay_aligned_as_samples_arrive():
    assert history_levels([8, 0, 0, 0, 0, 0], ceiling=8, bucket=5) == (8, 0)
    assert spark((0, 4, 8), width=2) == "▄█"

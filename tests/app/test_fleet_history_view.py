"""The fleet's history lines at scale: a thousand nodes' memory is hundreds of TiB, and the line that says
it stays within the screen's 120 columns, in binary units (as GiB, never GB)."""

from __future__ import annotations

from gpumem_tui.app.fleet_history_view import history_lines
from gpumem_tui.sources.prometheus.history import FleetHistory

GIB, TIB = 2**30, 2**40


def _history(used: float, free: float, reserved: float) -> FleetHistory:
    points = 121
    return FleetHistory(
        start=0.0,
        end=3600.0,
        step_s=30.0,
        series={
            "used_bytes": [used] * points,
            "free_bytes": [free] * points,
            "reserved_bytes": [reserved] * points,
            "kv_usage_max": [0.26] * points,
            "waiting": [0.0] * points,
            "preemptions_per_min": [0.0] * points,
        },
    )


def test_a_thousand_nodes_memory_line_fits_120_columns_in_tib():
    # 1,000 nodes of 8 H100s, as bench/fleet.py's fleet: 578,156.2 GiB used of 637,179.7 GiB
    history = _history(578_156.2 * GIB, 55_355.0 * GIB, 3_668.5 * GIB)
    (line,) = [line for line in history_lines(history) if "GPU memory used" in line]
    assert len(line) <= 120, line
    assert "now 564.61 TiB of 622.25 TiB, highest 564.61 TiB" in line


def test_a_small_fleet_still_says_gib():
    history = _history(70.4 * GIB, 8.0 * GIB, 0.5 * GIB)
    (line,) = [line for line in history_lines(history) if "GPU memory used" in line]
    assert "now 70.4 GiB of 78.9 GiB, highest 70.4 GiB" in line

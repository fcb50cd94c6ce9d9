"""What runs before a node's first frame: the node's screen does not load the fleet's (its screen, views and
judge), which only `gpumem-tui fleet` opens."""

from __future__ import annotations

import subprocess
import sys


def test_the_app_opens_a_node_without_loading_the_fleet_screen():
    code = "import sys, gpumem_tui.app.app; print(sorted(m for m in sys.modules if m.startswith('gpumem_tui.app')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "gpumem_tui.app.screens.main" in loaded
    assert "gpumem_tui.app.screens.fleet" not in loaded and "gpumem_tui.app.fleet_view" not in loaded

"""The collector after the first frame (app/heap.py): a refresh's few thousand objects no longer collect the
whole heap every few seconds, and what lives then is frozen only in a process that froze its imports."""

from __future__ import annotations

import gc
import subprocess
import sys

from gpumem_tui.sources.prometheus.gc_pause import YOUNG
from tests.app.conftest import settle


async def test_the_first_sample_drawn_makes_the_young_generation_roomy(make_app):
    before = gc.get_threshold()
    gc.set_threshold(700, *before[1:])
    frozen = gc.get_freeze_count()  # what the suite froze of its own imports (tests/conftest.py)
    try:
        app = make_app("busy-node")
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(app, pilot)
            await pilot.pause()
            assert app.node.sample is not None
            assert gc.get_threshold()[0] == YOUNG
            assert gc.get_freeze_count() <= frozen  # called from Python, as tests do: nothing more frozen (some die)
    finally:
        gc.set_threshold(*before)


def test_what_lives_is_frozen_where_the_process_froze_its_imports():
    code = (
        "import gc; from gpumem_tui.app import heap; from gpumem_tui.sources.prometheus import gc_pause\n"
        "gc.freeze(); heap.settle(); frozen = gc.get_freeze_count(); kept = [[] for _ in range(1000)]\n"
        "heap.settle(); assert gc.get_freeze_count() <= frozen, 'a freeze not by cli.program freezes nothing'\n"
        "gc_pause.freeze_imports(); frozen = gc.get_freeze_count(); more = [[] for _ in range(1000)]\n"
        "heap.settle(); assert gc.get_freeze_count() >= frozen + 1000, 'what lives now frozen with the imports'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

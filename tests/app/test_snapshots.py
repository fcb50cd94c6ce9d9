"""Pictures of each screen on the demo scenarios at a frozen time, at 80x24 and 160x48.

Each test says what a person should see. Update after an intended change with
`python3 -m pytest tests/app/test_snapshots.py --snapshot-update`, and look at the new pictures.
"""

from __future__ import annotations

import pytest
from textual.widgets import Input

from gpumem_tui.app.widgets.gpu_card import GpuCard
from gpumem_tui.diagnosis.findings.headline import headline
from tests.app.conftest import run_to
from tests.app.screen_text import screen_text

SMALL, LARGE = (80, 24), (160, 48)


def at(moment: float, *keys: str, focus: str | None = None, seen: dict | None = None):
    """Run to `moment`, press `keys`; `seen` gets the first screen's text and the headline finding."""

    async def run_before(pilot) -> None:
        await run_to(pilot.app, pilot, moment)
        if focus:
            pilot.app.screen.query_one(focus).focus()
        for key in keys:
            await pilot.press(key)
        await pilot.pause()
        for field in pilot.app.screen.query(Input):  # a blinking cursor is drawn or not by the clock:
            field.cursor_blink = False  # this holds it drawn, as the pictures show it
        # Compose the whole screen afresh: partial updates can split the same picture into different
        # SVG runs, which would make the same screen compare unequal.
        width, height = pilot.app.size
        await pilot.resize_terminal(width + 1, height)
        await pilot.pause()
        await pilot.resize_terminal(width, height)
        await pilot.pause()
        if seen is not None:
            seen["text"] = " ".join(" ".join(screen_text(pilot.app)).split())
            seen["headline"] = headline(pilot.app.node.investigation.findings)

    return run_before


def assert_headline_shown(seen: dict) -> None:
    """The worst finding's title is on the first screen, whole (status line or findings, lines joined)."""
    assert seen["headline"] is not None
    assert " ".join(seen["headline"].title.split()) in seen["text"]


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
def test_healthy_node(snap_compare, make_app, size):
    """One H100 serving Llama 3.1 8B: the measured bar (engine, then free) sits over the auto plan's bands
    (weights, context, activations, graphs, KV pool, the share utilization leaves); the plan-vs-measured
    table shows differences under 1 GB; the engine's KV gauge is green; no finding above info; under the
    header, the status line says what `check` says."""
    seen: dict = {}
    assert snap_compare(make_app("healthy-8b", 240), terminal_size=size, run_before=at(300, seen=seen))
    assert_headline_shown(seen)


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
def test_noisy_neighbour(snap_compare, make_app, size):
    """A notebook (pid 3100, user ana) holds 20 GiB on the engine's GPU: the measured bar shows a second
    (other-process) slice; 'other processes' and 'free' differ from the plan in yellow; two critical
    findings name the notebook and the 0.1 % of memory left, as traffic rises just before the OOM; the status
    line under the header names the notebook at every size."""
    seen: dict = {}
    assert snap_compare(make_app("noisy-neighbour", 40), terminal_size=size, run_before=at(55, seen=seen))
    assert seen["headline"].pid == 3100
    assert_headline_shown(seen)


def test_kv_pressure_small(snap_compare, make_app):
    """At 80x24, just after the pool filled, the KV gauge is red at 97 % with dozens waiting and preemptions
    per minute; a warning says the cache is full and how many more conversations another GPU or FP8 KV
    would hold."""
    seen: dict = {}
    assert snap_compare(make_app("kv-pressure", 60), terminal_size=SMALL, run_before=at(75, seen=seen))
    assert_headline_shown(seen)


def test_wrong_precision(snap_compare, make_app):
    """70B planned in FP8 but loaded in BF16 on two H100s: the manual plan's weights band is half the
    measured engine; critical findings say the weights are about twice the plan and the KV pool is short."""
    assert snap_compare(make_app("wrong-precision", 75), terminal_size=LARGE, run_before=at(90))


def test_gpu_lost(snap_compare, make_app):
    """GPU 2 fell off the bus: its card says LOST with the driver's words; the other cards and engines go
    on; critical findings name the lost GPU and the engine that died with it."""
    assert snap_compare(make_app("gpu-lost", 60), terminal_size=LARGE, run_before=at(75))


def test_tp4_small(snap_compare, make_app):
    """Llama 3.1 70B over four H100s at 80x24: one line per GPU (bar, used / total, as planned), so the
    findings and the engine fit on the first screen."""
    seen: dict = {}
    assert snap_compare(make_app("tp4-70b", 240), terminal_size=SMALL, run_before=at(300, seen=seen))
    assert_headline_shown(seen)


def test_busy_node_small(snap_compare, make_app):
    """Eight H100s and four engines at 80x24: eight one-line GPUs (bar, used / total, the plan's verdict:
    GPUs 6 and 7 carry the warning about their engine's full KV cache), then that warning in full."""
    seen: dict = {}
    assert snap_compare(make_app("busy-node", 240), terminal_size=SMALL, run_before=at(300, seen=seen))
    assert_headline_shown(seen)


def test_idle_node(snap_compare, make_app):
    """Eight H200s with nothing running: eight one-line GPUs of free memory with no plan, 'No engine
    endpoint found', no process rows."""
    assert snap_compare(make_app("idle-node", 0), terminal_size=LARGE, run_before=at(60))


def test_help(snap_compare, make_app):
    """The help sheet over the monitor: the keys, what each fill character of the bars means, GB vs GiB."""
    assert snap_compare(make_app("healthy-8b", 240), terminal_size=SMALL, run_before=at(300, "question_mark"))


def test_planner(snap_compare, make_app):
    """The planner opened on what runs: the engine's model, GPU, formats, context 8,192, one user, one GPU;
    its launch line, the plan's bands in GB and GiB with its verdict, and the fit table of fewest GPUs per
    format and card."""
    assert snap_compare(make_app("healthy-8b", 240), terminal_size=LARGE, run_before=at(300, "p"))


def test_gpu_details(snap_compare, make_app):
    """Enter on a GPU card: every field NVML gave for GPU 0, sizes in GB with exact bytes."""
    run_before = at(300, "enter", focus=GpuCard.__name__)
    assert snap_compare(make_app("healthy-8b", 240), terminal_size=SMALL, run_before=run_before)

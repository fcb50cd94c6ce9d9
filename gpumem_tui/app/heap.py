"""The garbage collector while a screen refreshes: what the first frame left alive (the app, its widgets, the
catalog, the feed) lives as long as the process, and collecting over it again every few seconds cost as
much as drawing (bench/tui_cpu.py). docs/design/app.md has the figures."""

from __future__ import annotations

from gpumem_tui.sources.prometheus.gc_pause import freeze_living, roomy


def settle() -> None:
    """After the first sample's frame: a young generation as roomy as the fleet reader's (a refresh makes a
    few thousand objects, almost none in cycles), and, where the process froze its imports at start
    (`cli.program`; never where tests call the app from Python), what lives now frozen with them."""
    roomy()
    freeze_living()

"""`check` on this node: one sample from NVML, the host and the engines it finds, judged."""

from __future__ import annotations

from gpumem_tui.catalog import Catalog
from gpumem_tui.cli.check_sources import Checked
from gpumem_tui.cli.errors import NoSourceError
from gpumem_tui.diagnosis.autoplan import engine_plans
from gpumem_tui.diagnosis.diagnose import diagnose
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.history import History
from gpumem_tui.diagnosis.overlays import ManualPlan
from gpumem_tui.sources.collector import Collector
from gpumem_tui.sources.feed import LiveFeed
from gpumem_tui.sources.host import HostSource
from gpumem_tui.sources.nvml import NvmlSource, NvmlUnavailable


async def from_live(
    endpoints: list[str], catalog: Catalog, manual: ManualPlan | None, thresholds: Thresholds
) -> Checked:
    nvml, host = NvmlSource(), HostSource()
    try:
        nvml.open()
    except NvmlUnavailable as exc:
        raise NoSourceError(str(exc)) from None
    # one sample, so it waits for every engine's answer (each bounded by the scraper's deadline)
    feed = LiveFeed(
        Collector(nvml, host, source="nvml"),
        host.command_lines,
        endpoints,
        engine_wait_s=None,
        look=host.proc.whereabouts,
    )
    try:
        sample = await feed.sample()
    finally:
        await feed.aclose()
        nvml.close()
    history = History()
    history.add(sample)
    plans = engine_plans(sample, catalog, manual)
    return Checked(sample, plans, diagnose(plans, sample, history, thresholds), "nvml", "this node (NVML)")

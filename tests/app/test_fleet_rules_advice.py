"""The fleet screen's header says to load the recording rules where a large fleet is read from the raw series
(diagnosis/fleet/scale.py), and not once the server has them."""

from __future__ import annotations

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.app.screens.fleet import Fleet
from gpumem_tui.diagnosis.fleet.scale import RULES_FROM_NODES
from gpumem_tui.sources.prometheus.records import Coverage, FleetNode, FleetSample
from tests.app.screen_text import screen_text

GIB = 2**30


def _sample(figures: str) -> FleetSample:
    nodes = [
        FleetNode(
            name=f"node-{i:04d}",
            gpus=1,
            cards={"NVIDIA H100 80GB HBM3": 1},
            used_bytes=40 * GIB,
            free_bytes=40 * GIB,
            reserved_bytes=0,
            total_bytes=80 * GIB,
            data_age_s=1.0,
            memory_from="dcgm-exporter",
        )
        for i in range(RULES_FROM_NODES)
    ]
    return FleetSample(
        source="http://prom.example:9090",
        evaluated_at=100.0,
        nodes=nodes,
        coverage=Coverage(nodes=len(nodes), gpus=len(nodes)),
        data_age_s=1.0,
        node_figures_from=figures,
    )


async def _header(sample: FleetSample) -> str:
    async def read():
        return sample

    app = GpuMemApp.of_fleet(Fleet(read, "http://prom.example:9090", poll=False, clock=lambda: 101.0))
    async with app.run_test(size=(200, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        return " ".join(" ".join(screen_text(app)[:6]).split())


async def test_the_header_says_to_load_the_rules_over_the_raw_series_only():
    said = "1,000 nodes aggregated from every GPU's series at each refresh: load the recording rules"
    assert said in await _header(_sample("raw series"))
    assert "recording rules" not in await _header(_sample("recording rules"))

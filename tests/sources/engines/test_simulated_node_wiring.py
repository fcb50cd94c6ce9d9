"""The simulated node end to end: its processes are discovered, its engines served and scraped for real."""

from __future__ import annotations

from gpumem_tui.demo import ManualClock, SimulatedNode, load_scenario
from gpumem_tui.demo.engine_server import MockEngineServer
from gpumem_tui.sources.engines.discovery import discover
from gpumem_tui.sources.engines.endpoints import endpoint
from gpumem_tui.sources.engines.scraper import Scraper


async def test_gpu_lost_node_three_engines_ok_and_the_crashed_one_down() -> None:
    clock = ManualClock()
    node = SimulatedNode(load_scenario("gpu-lost"), clock=clock)
    clock.set(300)
    found = discover([(pid, info.cmdline) for pid, info in node.process_infos().items()])
    states = {state.port: state for state in node.engine_states()}
    assert {e.url for e in found} == {f"http://127.0.0.1:{port}" for port, s in states.items() if s.phase != "crashed"}
    assert all(e.engine == "vllm" and list(e.pids) == states[int(e.url.rsplit(":", 1)[1])].pids for e in found)

    servers = {
        port: MockEngineServer(lambda port=port: [node.engine_state(states[port].id)]).start() for port in states
    }
    try:
        async with Scraper([endpoint(servers[port].url) for port in sorted(states)]) as scraper:
            statuses = await scraper.scrape()
    finally:
        for server in servers.values():
            server.stop()
    by_phase = {states[port].phase: [] for port in states}
    for port, status in zip(sorted(states), statuses, strict=True):
        by_phase[states[port].phase].append(status)
        if status.state == "ok":
            [record] = status.records
            assert (record.kv_usage_fraction, record.kv_pool_tokens) == (
                states[port].kv_usage_fraction,
                states[port].kv_pool_tokens,
            )
    assert [s.state for s in by_phase["ready"]] == ["ok", "ok", "ok"]
    assert [(s.state, s.error) for s in by_phase["crashed"]] == [("down", "HTTP 503 Service Unavailable")]

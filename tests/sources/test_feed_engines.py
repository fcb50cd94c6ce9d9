"""Feeds and engines: the GPU read never waits for a slow engine, one odd command line never stops a
refresh, and discovery probes only this node (endpoints given by hand always)."""

from __future__ import annotations

from gpumem_tui.demo import ManualClock, demo_collector
from gpumem_tui.demo.feed import DemoFeed
from gpumem_tui.sources.feed import LiveFeed
from tests.faults import FaultServer

SAMPLES = 5
"""Samples that must arrive while an endpoint's first request is still out: it trickles, so only the
scraper's total deadline (4 s) ends it; the first sample waits 1 s, each later one 0.1 s at most."""


def still_first_request(server: FaultServer) -> bool:
    """The server's first /metrics request is still open: the client has not given up on it yet."""
    return server.paths.count("/metrics") == 1 and server.open_now >= 1


async def test_gpu_samples_keep_coming_while_an_engine_hangs():
    clock = ManualClock(100)
    collector, _ = demo_collector("healthy-8b", clock=clock)
    with FaultServer(metrics="trickle", models="trickle") as hung:
        feed = LiveFeed(collector, None, [hung.url])
        samples = []
        while len(samples) < SAMPLES:
            clock.set(clock() + 1)
            samples.append(await feed.sample())
            assert still_first_request(hung), f"sample {len(samples)} waited for the hung endpoint"
        await feed.aclose()
    assert [len(s.gpus) for s in samples] == [1] * SAMPLES
    assert len({s.timestamp for s in samples}) == SAMPLES, "each sample is a fresh GPU read"
    assert all(s.engines[0].state == "down" and "no answer yet" in s.engines[0].error for s in samples)


async def test_demo_samples_keep_coming_beside_a_hung_endpoint_and_its_engines_stay_up():
    clock = ManualClock(100)
    with FaultServer(metrics="trickle", models="trickle") as hung:
        feed = DemoFeed("healthy-8b", clock, engine_wait_s=0.05, endpoints=[hung.url])
        states = []
        while len(states) < SAMPLES or states[-1] != ("ok", "down"):
            clock.set(clock() + 1)
            demo, stranger = (await feed.sample()).engines
            states.append((demo.state, stranger.state))
            assert still_first_request(hung), f"sample {len(states)} waited for the hung endpoint"
        await feed.aclose()
    answered = [demo for demo, _ in states].index("ok")
    assert set(states[answered:]) == {("ok", "down")}, "the simulated engine stays up from its first answer"


async def test_a_command_line_discovery_cannot_read_is_a_note_and_the_refresh_goes_on():
    clock = ManualClock(100)
    collector, _ = demo_collector("healthy-8b", clock=clock)
    with FaultServer() as engine:
        port = engine.url.rsplit(":", 1)[1]
        lines = [
            (1, "vllm serve m --port 99999"),
            (2, ["vllm", "serve", "m", "--port"]),
            (3, f"vllm serve m --port {port}"),
        ]
        feed = LiveFeed(collector, lambda: lines, [], engine_wait_s=None)
        sample = await feed.sample()
        await feed.aclose()
    assert len(sample.gpus) == 1
    assert [(e.url, e.state) for e in sample.engines] == [(engine.url, "ok")]
    notes = [e.message for e in sample.errors if e.source == "discovery"]
    assert notes == [
        "pid 1: vllm with --port '99999', not a port (1 to 65535): not probed",
        "pid 2: vllm with --port but no value: not probed",
    ]


async def test_a_discovery_that_fails_is_a_note_and_the_given_endpoints_stay():
    collector, _ = demo_collector("healthy-8b", clock=ManualClock(100))

    def broken() -> list:
        raise PermissionError("/proc is not readable")

    with FaultServer() as engine:
        feed = LiveFeed(collector, broken, [engine.url], engine_wait_s=None)
        sample = await feed.sample()
        await feed.aclose()
    assert [(e.url, e.state) for e in sample.engines] == [(engine.url, "ok")]
    assert [e.message for e in sample.errors] == ["engine discovery failed: PermissionError: /proc is not readable"]


async def test_discovery_probes_only_this_node_and_an_endpoint_given_by_hand_always():
    collector, _ = demo_collector("healthy-8b", clock=ManualClock(100))
    elsewhere = "192.0.2.1"  # TEST-NET-1: no node has it
    with FaultServer() as local:
        port = local.url.rsplit(":", 1)[1]
        lines = [
            (1, f"vllm serve m --host {elsewhere} --port 8000"),
            (2, f"vllm serve m --host 127.0.0.1 --port {port}"),
        ]
        feed = LiveFeed(
            collector, lambda: lines, [f"http://{elsewhere}:9000"], engine_wait_s=0.0, addresses=lambda: {"10.1.2.3"}
        )
        sample = await feed.sample()
        await feed.aclose()
    assert [e.url for e in sample.engines] == [f"http://{elsewhere}:9000", local.url]
    [note] = [e.message for e in sample.errors if e.source == "discovery"]
    assert f"serves on '{elsewhere}', not an address of this node" in note and "--endpoint" in note

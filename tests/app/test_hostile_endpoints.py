"""The screen over the simulated node while endpoints hang, trickle, fail, flood, cut off and list 6,000
models: keys keep working, GPU samples keep coming, the healthy endpoint stays up, and `q` leaves no
connection open."""

from __future__ import annotations

from contextlib import ExitStack

from gpumem_tui.app.app import GpuMemApp
from gpumem_tui.demo import WallClock, demo_collector
from gpumem_tui.diagnosis.judge import Judge
from gpumem_tui.sources.feed import LiveFeed
from tests.app.conftest import text_of
from tests.faults import FaultServer, closed

HOSTILE = [
    {"metrics": "hang"},
    {"metrics": "trickle"},
    {"metrics": "http_500"},
    {"metrics": "huge"},
    {"metrics": "huge_declared"},
    {"metrics": "cut"},
    {"models": "trickle"},
    {"models": "many_models"},
]
ROUNDS = 12


class Watched(GpuMemApp):
    """Counts the samples that reach the screen and keeps each endpoint's state in each: the node screen's
    SampleReady bubbles up to the app once the screen has drawn it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.states: list[dict[str, str]] = []

    def on_sample_ready(self, message) -> None:
        self.states.append({e.url: e.state for e in message.sample.engines})


async def test_keys_and_gpu_samples_keep_going_while_endpoints_misbehave(catalog):
    collector, _ = demo_collector("healthy-8b", clock=WallClock(start_s=100))
    lines = [(1, "vllm serve m --port 99999"), (2, "vllm serve m --host 192.0.2.1")]
    with ExitStack() as stack:
        hostile = [stack.enter_context(FaultServer(**faults)) for faults in HOSTILE]
        healthy = stack.enter_context(FaultServer())
        feed = LiveFeed(collector, lambda: lines, [s.url for s in [*hostile, healthy]])
        app = Watched(feed, Judge(catalog), interval_s=0.25)
        async with app.run_test(size=(160, 48)) as pilot:
            for round_ in range(ROUNDS):
                await pilot.press("g")  # each press is applied at once, whatever the endpoints do
                assert app.node.unit == ("GiB" if round_ % 2 == 0 else "GB")
                await pilot.pause(0.15)
            await pilot.press("space")
            assert app.node.paused
            status = text_of(app.screen.query_one("#source-status"))
            await pilot.press("q")
        assert not app.is_running
        assert await closed(*hostile, healthy), "q closed every connection"
    assert len(app.states) >= 4, "GPU samples kept coming"
    first = next(i for i, states in enumerate(app.states) if states[healthy.url] == "ok")
    assert {states[healthy.url] for states in app.states[first:]} == {"ok"}
    for server, faults in zip(hostile, HOSTILE, strict=True):
        seen = [states[server.url] for states in app.states]
        if "models" in faults:  # /metrics answers; the first poll waits MODELS_GRACE_S for /v1/models
            assert "ok" in seen, faults
            assert set(seen[seen.index("ok") :]) == {"ok"}, faults
        else:
            assert set(seen[first:]) <= {"down", "stale"}, faults
    assert "discovery: pid 1: vllm with --port '99999', not a port (1 to 65535): not probed" in status
    assert "pid 2: vllm serves on '192.0.2.1', not an address of this node" in status

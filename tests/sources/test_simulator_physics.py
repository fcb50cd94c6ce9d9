"""Property: whatever the scenario, no card ever holds more than it has and a KV pool never moves."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpumem_tui.demo import ManualClock, SimulatedNode
from gpumem_tui.demo.scenario import EngineSpec, Event, GpuGroup, ProcessSpec, Scenario

GPUS = ["h100", "h200", "a100-sxm4-40gb", "l40s", "rtx-4090"]
MODELS = ["llama-3.1-8b", "meta-llama/Llama-3.2-1B", "Qwen/Qwen3-8B", "llama-3.1-70b"]


@st.composite
def scenarios(draw) -> Scenario:
    count = draw(st.integers(1, 4))
    engines = []
    for k in range(draw(st.integers(0, 2))):
        first = draw(st.integers(0, count - 1))
        tp = draw(st.sampled_from([n for n in (1, 2, 4) if first + n <= count]))
        engines.append(
            EngineSpec(
                id=f"e{k}",
                model=draw(st.sampled_from(MODELS)),
                gpus=list(range(first, first + tp)),
                format=draw(st.sampled_from(["bf16", "fp8"])),
                max_model_len=draw(st.sampled_from([2048, 8192])),
                gpu_memory_utilization=draw(st.floats(0.3, 0.95)),
                start_s=draw(st.integers(0, 30)),
                load_s=draw(st.integers(0, 20)),
                pid=2000 + 100 * k,
            )
        )
    processes = [
        ProcessSpec(
            id=f"p{k}",
            gpus=[draw(st.integers(0, count - 1))],
            memory_gib=draw(st.floats(0, 90)),
            start_s=draw(st.integers(0, 60)),
            ramp_s=draw(st.integers(0, 20)),
            pid=5000 + k,
        )
        for k in range(draw(st.integers(0, 2)))
    ]
    events = [
        Event(
            at_s=draw(st.integers(0, 60)),
            kind="traffic",
            engine=e.id,
            rate=draw(st.floats(0, 50)),
            ramp_s=draw(st.integers(0, 30)),
        )
        for e in engines
    ]
    return Scenario(
        name="property",
        gpus=[GpuGroup(model=draw(st.sampled_from(GPUS)), count=count)],
        engines=engines,
        processes=processes,
        events=events,
        seed=draw(st.integers(0, 1000)),
    )


@settings(max_examples=40, deadline=None)
@given(scenarios())
def test_memory_plus_reserved_never_exceeds_the_card(scenario):
    clock = ManualClock()
    node = SimulatedNode(scenario, clock=clock)
    pools: dict[str, int] = {}
    for t in range(0, 150, 2):
        clock.set(t)
        node.sync()
        for gpu in node.gpus:
            assert gpu.used_bytes + gpu.reserved_bytes <= gpu.total_bytes
            assert gpu.free_bytes >= 0
        for state in node.engine_states():
            if state.kv_pool_tokens is not None:
                assert pools.setdefault(state.id, state.kv_pool_tokens) == state.kv_pool_tokens
            if state.kv_usage_fraction is not None:
                assert 0 <= state.kv_usage_fraction <= 1
                assert state.requests_running <= state.kv_pool_tokens // 2000 + 1

"""The simulated node: every shipped scenario runs, honestly, deterministically, and tells its story."""

from __future__ import annotations

import pytest

from gpumem_tui.catalog import load_catalog
from gpumem_tui.demo import ManualClock, ScenarioError, SimulatedNode, load_scenario, scenario_names
from gpumem_tui.demo.scenario import parse_scenario
from gpumem_tui.planner.weights import weights_bytes_per_gpu
from gpumem_tui.units import GIB, MIB

SHIPPED = [
    "gpu-lost",
    "healthy-8b",
    "idle-node",
    "kv-pressure",
    "noisy-neighbour",
    "slurm-denied",
    "tp4-70b",
    "wrong-precision",
]


def run(name: str, until: float, seed: int | None = None) -> tuple[SimulatedNode, ManualClock]:
    clock = ManualClock()
    node = SimulatedNode(load_scenario(name), clock=clock, seed=seed)
    clock.set(until)
    node.sync()
    return node, clock


def states_over(name: str, engine: str, seconds: range) -> list:
    clock = ManualClock()
    node = SimulatedNode(load_scenario(name), clock=clock)
    states = []
    for t in seconds:
        clock.set(t)
        states.append(node.engine_state(engine))
    return states


def test_the_shipped_scenarios_ship():
    assert set(SHIPPED) <= set(scenario_names())


@pytest.mark.parametrize("name", SHIPPED)
def test_each_scenario_runs_without_exceeding_any_card(name):
    scenario = load_scenario(name)
    clock = ManualClock()
    node = SimulatedNode(scenario, clock=clock)
    catalog = load_catalog()
    for t in range(0, int(scenario.duration_s) + 1, 5):
        clock.set(t)
        node.sync()
        for gpu in node.gpus:
            assert gpu.total_bytes == catalog.gpu(gpu.spec.key).total_mib * MIB
            assert gpu.used_bytes + gpu.reserved_bytes <= gpu.total_bytes, (name, t, gpu.index)
            assert all(held >= 0 for held in gpu.held.values())


def test_an_h100_reports_81559_mib():
    node, _ = run("healthy-8b", 0)
    assert node.gpus[0].total_bytes == 81_559 * MIB


def test_the_kv_pool_is_carved_once_and_stays():
    states = states_over("kv-pressure", "llama-8b", range(0, 600, 3))
    pools = {s.kv_pool_tokens for s in states if s.phase == "ready"}
    assert len(pools) == 1 and pools.pop() > 0
    assert all(s.kv_pool_tokens is None for s in states if s.phase in ("loading", "profiling"))


def test_same_seed_same_node_other_seed_other_traffic():
    a, _ = run("healthy-8b", 300, seed=7)
    b, _ = run("healthy-8b", 300, seed=7)
    c, _ = run("healthy-8b", 300, seed=8)
    assert a.engine_states() == b.engine_states()
    assert a.engine_states() != c.engine_states()


def test_kv_pressure_fills_the_cache_preempts_and_queues():
    early, full, late = (
        states_over("kv-pressure", "llama-8b", range(0, 600, 1))[45],
        *[states_over("kv-pressure", "llama-8b", range(0, 600, 1))[t] for t in (250, 590)],
    )
    assert early.kv_usage_fraction < 0.5 and early.preemptions_total == 0
    assert full.kv_usage_fraction >= 0.95 and late.kv_usage_fraction >= 0.95
    assert 0 < full.preemptions_total < late.preemptions_total
    assert 0 < full.requests_waiting < late.requests_waiting


def test_wrong_precision_loads_twice_the_planned_weights():
    node, _ = run("wrong-precision", 300)
    state = node.engine_state("llama-70b")
    catalog = load_catalog()
    planned = weights_bytes_per_gpu(catalog.model(state.model), catalog.format(state.planned_format), 2)
    assert state.weights_bytes_per_gpu == pytest.approx(2 * planned, rel=0.001)
    assert state.phase == "ready" and state.kv_cache_bytes_per_gpu < 2 * GIB


def test_noisy_neighbour_takes_20_gib_then_the_engine_dies_of_oom():
    before, _ = run("noisy-neighbour", 48)
    assert before.processes[0].held_bytes == 20 * GIB and before.engine_state("llama-8b").phase == "ready"
    after, _ = run("noisy-neighbour", 400)
    state = after.engine_state("llama-8b")
    assert state.phase == "crashed" and "CUDA out of memory" in state.error
    assert after.gpus[0].held == {3100: 20 * GIB}


def test_tp4_70b_puts_one_worker_on_each_card():
    node, _ = run("tp4-70b", 300)
    state = node.engine_state("llama-70b")
    assert state.tensor_parallel_size == 4 and state.pids == [2100, 2101, 2102, 2103]
    assert len({gpu.used_bytes for gpu in node.gpus}) == 1
    assert [list(gpu.held) for gpu in node.gpus] == [[2100], [2101], [2102], [2103]]


def test_idle_node_is_eight_empty_h200s():
    node, _ = run("idle-node", 60)
    assert [gpu.total_bytes for gpu in node.gpus] == [143_771 * MIB] * 8
    assert all(gpu.used_bytes == 0 for gpu in node.gpus) and node.process_infos() == {}


def test_gpu_lost_takes_down_only_its_own_replica():
    node, _ = run("gpu-lost", 300)
    assert [gpu.lost for gpu in node.gpus] == [False, False, True, False]
    phases = {s.id: s.phase for s in node.engine_states()}
    assert phases == {
        "replica-0": "ready",
        "replica-1": "ready",
        "replica-2": "crashed",
        "replica-3": "ready",
    }


def test_an_engine_refuses_to_start_without_its_budget():
    node = SimulatedNode(
        parse_scenario("""
[[gpus]]
model = "h100"
[[processes]]
id = "squatter"
gpus = [0]
memory_gib = 30
[[engines]]
id = "late"
model = "llama-3.1-8b"
gpus = [0]
start_s = 5
"""),
        clock=ManualClock(30),
    )
    state = node.engine_state("late")
    assert state.phase == "failed" and "less than desired GPU memory utilization" in state.error


def test_the_clock_only_moves_forward():
    clock = ManualClock(10)
    with pytest.raises(ValueError):
        clock.set(5)


@pytest.mark.parametrize(
    "text, words",
    [
        ("[[gpus]]\nmodel = 'h100'\n[[engines]]\nid='x'\nmodel='llama-3.1-8b'\ngpus=[3]", "names GPUs [3]"),
        ("[[gpus]]\nmodel = 'h100'\n[[engines]]\nid='x'\nmodel='no-such-model'\ngpus=[0]", "unknown model"),
        ("[[gpus]]\nmodel = ", "scenario"),
        ("[[gpus]]\nmodel = 'h100'\n[[events]]\nat_s=1\nkind='traffic'", "needs `engine` and `rate`"),
        ("[[gpus]]\nmodel = 'h100'\ndenied = 'yes'", "gpus.0.denied: Input should be a valid boolean"),
    ],
)
def test_bad_scenarios_say_what_is_wrong(text, words):
    with pytest.raises(ScenarioError, match=words.replace("[", r"\[").replace("]", r"\]")):
        SimulatedNode(parse_scenario(text))


def test_unknown_scenario_names_the_closest():
    with pytest.raises(ScenarioError, match="healthy-8b"):
        load_scenario("healthy-7b")

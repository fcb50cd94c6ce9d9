"""The simulated host's view of its processes is built once per process and per busy or idle (the records
are frozen, and a busy engine's CPU is all of it that moves), and each view's pod is read once."""

from __future__ import annotations

from gpumem_tui.demo import ManualClock, SimulatedHost, SimulatedNode, load_scenario
from gpumem_tui.demo.scenario import parse_scenario

ENGINE_AND_JOB = """
[[gpus]]
model = "h100"

[[engines]]
id = "llama"
model = "llama-3.1-8b"
gpus = [0]

[[processes]]
id = "job"
gpus = [0]
memory_gib = 4

[[events]]
at_s = 100
kind = "traffic"
engine = "llama"
rate = 4.0
"""


def test_a_process_view_is_built_once_and_again_when_the_engine_turns_busy_or_stops() -> None:
    clock = ManualClock()
    node = SimulatedNode(parse_scenario(ENGINE_AND_JOB), clock=clock)
    clock.set(60)
    idle = node.process_infos()
    clock.set(99)
    assert all(record is idle[pid] for pid, record in node.process_infos().items())
    clock.set(110)
    busy = node.process_infos()
    assert (idle[2100].cpu_percent, busy[2100].cpu_percent) == (6.0, 100.0) and busy[3100] is idle[3100]
    assert busy[2100].model_dump(exclude={"cpu_percent"}) == idle[2100].model_dump(exclude={"cpu_percent"})
    node.signal(2100, force=True)
    assert list(node.process_infos()) == [3100]


def test_a_process_pod_is_read_once_per_view_of_it(monkeypatch) -> None:
    clock = ManualClock()
    node = SimulatedNode(load_scenario("k8s-two-pods"), clock=clock)
    host = SimulatedHost(node)
    read: list[int] = []
    pod = host.proc.pod

    def counted(pid):
        read.append(pid)
        return pod(pid)

    monkeypatch.setattr(host.proc, "pod", counted)
    clock.set(load_scenario("k8s-two-pods").start_s)
    pids = sorted(node.process_infos())
    first = host.describe(pids)
    assert read == pids and all(first[pid].pod for pid in pids)
    again = host.describe(pids)  # the same second: the same views, their pods kept
    assert read == pids and all(again[pid] is first[pid] for pid in pids)
    views = node.process_infos()
    node._infos.clear()  # every view built anew, as when a process turns busy or idle
    assert all(node.process_infos()[pid] is not views[pid] for pid in pids)
    assert host.describe(pids) == first and read == pids * 2

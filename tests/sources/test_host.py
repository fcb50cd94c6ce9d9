"""The psutil host source: real pids described, vanished or foreign pids shown as not visible."""

from __future__ import annotations

import os
import subprocess
import sys

from gpumem_tui.demo import ManualClock, SimulatedHost, SimulatedNode, load_scenario
from gpumem_tui.sources.host import HostSource
from gpumem_tui.sources.procfs import ProcFiles


def test_describes_a_live_process():
    source = HostSource()
    me = source.describe([os.getpid()])[os.getpid()]
    assert me.visible and me.name and me.host_rss_bytes > 0 and me.cmdline
    assert me.cpu_percent is None  # one look cannot measure CPU
    again = source.describe([os.getpid()])[os.getpid()]
    assert isinstance(again.cpu_percent, float)


def test_an_exited_pid_is_not_visible_never_an_exception():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    info = HostSource().describe([child.pid, 4_194_304 + 17])
    for pid, described in info.items():
        assert described.visible is False and described.note == f"pid {pid}, not visible here"


def test_host_memory_and_cpu():
    source = HostSource()
    first, second = source.host(), source.host()
    assert first.memory_total_bytes > first.memory_available_bytes > 0
    assert first.cpu_percent is None and second.cpu_percent is not None and second.cpu_count > 0


def test_simulated_host_describes_its_own_processes():
    node = SimulatedNode(load_scenario("noisy-neighbour"), clock=ManualClock(48))
    host = SimulatedHost(node)
    infos = host.describe([2100, 3100, 99])
    assert infos[2100].name == "VLLM::EngineCore" and infos[3100].user == "ana"
    assert infos[99].visible is False
    assert host.host().memory_total_bytes == 1024 * 2**30


def test_a_process_in_a_pod_is_described_with_its_pod(tmp_path):
    """psutil reads the real process; its cgroup and the kubelet's pod directories come from a /proc tree."""
    proc, logs = tmp_path / "proc", tmp_path / "pods"
    uid = "4a1f2c3d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
    cgroup = proc / str(os.getpid()) / "cgroup"
    cgroup.parent.mkdir(parents=True)
    cgroup.write_text(f"0::/kubepods.slice/kubepods-pod{uid.replace('-', '_')}.slice/cri-containerd-3f9a.scope\n")
    (logs / f"team-a_[red]x_{uid}").mkdir(parents=True)
    me = HostSource(ProcFiles(proc, logs)).describe([os.getpid()])[os.getpid()]
    assert me.visible and me.name and me.pod == "team-a/[red]x"
    assert HostSource(ProcFiles(tmp_path / "none", logs)).describe([os.getpid()])[os.getpid()].pod is None

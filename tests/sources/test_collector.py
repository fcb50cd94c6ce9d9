"""A sample joins NVML's pids with what the host knows about them."""

from __future__ import annotations

from gpumem_tui.demo import ManualClock, demo_collector
from gpumem_tui.demo.driver_abi import ERROR_DRIVER_NOT_LOADED
from gpumem_tui.sources.collector import Collector
from gpumem_tui.sources.host import HostSource


def test_demo_sample_has_gpus_named_processes_host_and_time():
    collector, node = demo_collector("tp4-70b", clock=ManualClock(300))
    sample = collector.sample()
    assert sample.source == "demo:tp4-70b" and sample.hostname == "gpu-node-05"
    assert sample.timestamp == node.scenario.start_epoch + 300
    assert [p.name for p in sample.processes] == [f"VLLM::Worker_TP{r}" for r in range(4)]
    assert all(p.visible and p.gpu_memory_bytes for p in sample.processes)
    assert sample.host.cpu_count == 96 and sample.errors == []


def test_a_pid_from_another_namespace_is_shown_as_not_visible(make_rig):
    """NVML reports a host pid that this PID namespace does not have (as inside a container)."""
    rig = make_rig(make_rig.base.replace("gpus = [0]", "gpus = [0]\npid = 4194303"))
    sample = Collector(rig.source, HostSource(), source="nvml", clock=lambda: 0.0).sample()
    (process,) = sample.processes
    assert process.pid == 4194303 and process.visible is False
    assert process.note == "pid 4194303, not visible here" and process.gpu_memory_bytes > 0


def test_unavailable_nvml_becomes_an_error_in_the_sample(make_rig):
    rig = make_rig()
    rig.driver.fail("nvmlInitWithFlags", ERROR_DRIVER_NOT_LOADED)
    sample = Collector(rig.source, HostSource(), source="nvml", clock=lambda: 0.0).sample()
    assert sample.gpus == [] and sample.errors[0].source == "nvml"
    assert "driver is not loaded" in sample.errors[0].message and sample.host is not None

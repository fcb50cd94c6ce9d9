"""The NVML source over the real pynvml binding over the fake driver: readings, fallbacks, and every error case."""

from __future__ import annotations

import pytest

from gpumem_tui.demo import driver_abi as abi
from gpumem_tui.demo.scenario import scenario_dir
from gpumem_tui.sources.nvml import NvmlSource, NvmlUnavailable
from gpumem_tui.units import MIB


def test_reads_every_gpu_and_its_processes(rig):
    reading = rig.source.read()
    first, second = reading.gpus
    assert first.name == "NVIDIA H100 80GB HBM3"
    assert first.memory_total_bytes == 81_559 * MIB
    assert first.memory_reserved_bytes == 470 * MIB
    assert first.memory_used_bytes == sum(p.gpu_memory_bytes for p in reading.processes) > 0
    assert first.memory_free_bytes == first.memory_total_bytes - first.memory_reserved_bytes - first.memory_used_bytes
    assert second.memory_used_bytes == 0
    assert [(p.pid, p.gpu_index, p.kind) for p in reading.processes] == [(2100, 0, "compute")]
    assert first.power_limit_w == 700.0 and first.temperature_c is not None
    assert first.mig_enabled is False and reading.errors == []
    assert reading.driver_version == "570.124.06"
    assert (first.bus_id, second.bus_id) == ("00000000:18:00.0", "00000000:26:00.0")


def test_a_copy_of_the_binding_handed_back_serves_the_next_driver_as_a_fresh_copy(make_rig):
    """The simulated fleet reads its nodes one after another on one copy: handed back, it forgets the last
    driver's library, the function pointers it looked up there and its `nvmlInit`."""
    first = make_rig()
    assert len(first.source.read().gpus) == 2
    first.source.release()
    calls = first.driver.calls
    second = make_rig(make_rig.base.replace("count = 2", "count = 1"))
    assert second.binding is first.binding, "the copy handed back is taken over"
    assert len(second.source.read().gpus) == 1, "read through the new driver, not pointers into the old one"
    assert first.driver.calls == calls and second.driver.calls > 0
    assert second.binding._nvmlLib_refcount == 1


def test_memory_falls_back_to_v1_where_the_driver_lacks_v2(make_rig):
    rig = make_rig(make_rig.base.replace("count = 2", 'count = 2\nunsupported = ["memory_v2"]'))
    gpu = rig.source.read().gpus[0]
    assert gpu.memory_reserved_bytes is None
    assert gpu.memory_used_bytes == gpu.memory_total_bytes - gpu.memory_free_bytes  # v1 counts reserved as used


def test_memory_v1_when_the_driver_has_no_v2_symbol(rig):
    rig.driver.hide("nvmlDeviceGetMemoryInfo_v2")
    gpu = rig.source.read().gpus[0]
    assert gpu.memory_reserved_bytes is None and gpu.memory_total_bytes == 81_559 * MIB


@pytest.mark.parametrize(
    "reading, fields",
    [
        ("power", ["power_w", "power_limit_w"]),
        ("temperature", ["temperature_c"]),
        ("utilization", ["utilization_gpu_percent", "utilization_memory_percent"]),
        ("mig", ["mig_enabled"]),
    ],
)
def test_not_supported_makes_only_that_field_none(make_rig, reading, fields):
    rig = make_rig(make_rig.base.replace("count = 2", f'count = 2\nunsupported = ["{reading}"]'))
    result = rig.source.read()
    gpu = result.gpus[0]
    for name in fields:
        assert getattr(gpu, name) is None, name
    assert gpu.memory_used_bytes and gpu.name and not gpu.lost and len(result.processes) == 1


def test_function_not_found_falls_back_to_the_older_process_call(rig):
    rig.driver.hide("nvmlDeviceGetComputeRunningProcesses_v3")
    assert [p.pid for p in rig.source.read().processes] == [2100]


def test_a_driver_without_v3_uses_v2(make_rig):
    rig = make_rig(version="470.256.02")
    assert [(p.pid, p.gpu_memory_bytes > 0) for p in rig.source.read().processes] == [(2100, True)]
    assert rig.driver.crashes == []


def test_function_not_found_on_a_field_makes_it_none(rig):
    rig.driver.hide("nvmlDeviceGetEnforcedPowerLimit")
    gpu = rig.source.read().gpus[0]
    assert gpu.power_limit_w is None and gpu.power_w is not None


@pytest.mark.parametrize("code", [abi.ERROR_GPU_IS_LOST, abi.ERROR_RESET_REQUIRED])
def test_a_lost_gpu_is_marked_and_the_others_go_on(rig, code):
    """Unknown Error is no longer here: NVML means "any unexpected error" by it, one reading's, not the card's."""
    rig.driver.fail("nvmlDeviceGetMemoryInfo_v2", code, gpu=0)
    reading = rig.source.read()
    lost, healthy = reading.gpus
    assert lost.lost and lost.name == "NVIDIA H100 80GB HBM3" and lost.memory_total_bytes is None
    assert not healthy.lost and healthy.memory_total_bytes == 81_559 * MIB
    assert reading.processes == []  # the lost card's processes cannot be read
    assert [e.gpu_index for e in reading.errors] == [0] and "lost" in reading.errors[0].message
    assert "may need a reset" in (reading.errors[0].hint or "")


def test_gpu_lost_on_the_handle_itself(make_rig):
    rig = make_rig((scenario_dir() / "gpu-lost.toml").read_text(), at=200)
    reading = rig.source.read()
    assert [g.lost for g in reading.gpus] == [False, False, True, False]
    assert sorted(p.gpu_index for p in reading.processes) == [0, 1, 3]


@pytest.mark.parametrize(
    "code, words",
    [
        (abi.ERROR_DRIVER_NOT_LOADED, "driver is not loaded"),
        (abi.ERROR_NO_PERMISSION, "no permission"),
        (abi.ERROR_LIB_RM_VERSION_MISMATCH, "different versions"),
    ],
)
def test_unusable_nvml_is_unavailable_with_a_reason_and_a_hint(rig, code, words):
    rig.driver.fail("nvmlInitWithFlags", code)
    with pytest.raises(NvmlUnavailable) as caught:
        rig.source.read()
    assert words in caught.value.reason
    assert "--demo" in caught.value.hint


def test_a_missing_library_is_unavailable_with_a_reason_and_a_hint(rig, monkeypatch):
    """The binding's own loader: no library handle yet, and dlopen of libnvidia-ml.so.1 fails."""

    def no_library(name):
        raise OSError(f"{name}: cannot open shared object file: No such file or directory")

    rig.binding.nvmlLib = None
    monkeypatch.setattr(rig.binding, "CDLL", no_library)
    with pytest.raises(NvmlUnavailable) as caught:
        rig.source.read()
    assert "libnvidia-ml.so.1" in caught.value.reason and "--demo" in caught.value.hint


def test_the_binding_over_the_driver_raises_its_own_classes(rig):
    nvml = rig.binding
    rig.driver.fail("nvmlDeviceGetName", abi.ERROR_GPU_IS_LOST)
    nvml.nvmlInit()
    with pytest.raises(nvml.NVMLError_GpuIsLost):
        nvml.nvmlDeviceGetName(nvml.nvmlDeviceGetHandleByIndex(0))
    nvml.nvmlShutdown()
    with pytest.raises(nvml.NVMLError_Uninitialized):
        nvml.nvmlDeviceGetCount()
    with pytest.raises(nvml.NVMLError_FunctionNotFound):
        nvml.nvmlDeviceGetNvLinkState(None, 0)


def test_the_binding_reads_the_driver_through_ctypes(rig):
    """The structs the driver fills are the binding's: strings decoded, memory v2 versioned, handles opaque."""
    nvml = rig.binding
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(1)
    assert nvml.nvmlSystemGetDriverVersion() == "570.124.06"
    assert nvml.nvmlDeviceGetName(handle) == "NVIDIA H100 80GB HBM3"
    assert nvml.nvmlDeviceGetUUID(handle).startswith("GPU-")
    assert nvml.nvmlDeviceGetPciInfo(handle).busId == "00000000:26:00.0"
    memory = nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
    assert (memory.total, memory.reserved, memory.used) == (81_559 * MIB, 470 * MIB, 0)
    assert nvml.nvmlDeviceGetComputeRunningProcesses(handle) == []
    (engine,) = nvml.nvmlDeviceGetComputeRunningProcesses(nvml.nvmlDeviceGetHandleByIndex(0))
    assert engine.pid == 2100 and engine.usedGpuMemory > 0 and engine.gpuInstanceId == abi.NO_INSTANCE
    nvml.nvmlShutdown()


def test_mig_instances_and_the_processes_inside_them(make_rig):
    rig = make_rig(
        """
[[gpus]]
model = "a100-sxm4-80gb"
mig_instances_mib = [40192, 19968]

[[processes]]
id = "job"
gpus = [0]
memory_gib = 8
mig_instance = 1
""",
        at=5,
    )
    reading = rig.source.read()
    gpu = reading.gpus[0]
    assert gpu.mig_enabled is True
    assert [(m.gpu_instance_id, m.memory_total_bytes) for m in gpu.mig_instances] == [
        (1, 40192 * MIB),
        (2, 19968 * MIB),
    ]
    assert gpu.mig_instances[1].memory_used_bytes == 8 * 1024 * MIB
    assert [(p.pid, p.gpu_instance_id) for p in reading.processes] == [(3100, 2)]


def test_a_pid_in_both_lists_is_compute_plus_graphics(make_rig):
    rig = make_rig(
        """
[[gpus]]
model = "l40s"

[[processes]]
id = "desktop"
name = "Xorg"
gpus = [0]
memory_gib = 1
nvml_kind = "compute+graphics"
""",
        at=2,
    )
    (process,) = rig.source.read().processes
    assert process.kind == "compute+graphics" and process.gpu_memory_bytes == 1024 * MIB


def test_the_real_library_on_a_node_without_a_driver_is_unavailable():
    source = NvmlSource()
    try:
        source.open()
    except NvmlUnavailable as exc:
        assert exc.reason and "--demo" in exc.hint
    else:
        source.close()
        pytest.skip("this machine has a working NVIDIA driver")

"""What never changes on a card is read once while NVML is open: its name, UUID and bus id, and the driver's
version. Everything else, and whether the card still answers, is read every sample."""

from __future__ import annotations

from collections import Counter

from gpumem_tui.demo import driver_abi as abi

FACTS = ("nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetPciInfo_v3", "nvmlSystemGetDriverVersion")
READINGS = ("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetComputeRunningProcesses_v3")


def _counted(rig) -> Counter:
    """Calls that reached the driver, by symbol."""
    calls: Counter = Counter()
    for symbol in FACTS + READINGS:
        rig.driver.after(symbol, lambda *_args, symbol=symbol: calls.update([symbol]))
    return calls


def test_static_facts_are_read_once_per_device_and_readings_every_sample(rig) -> None:
    calls = _counted(rig)
    readings = [rig.source.read() for _ in range(3)]
    assert {symbol: calls[symbol] for symbol in FACTS} == {
        "nvmlDeviceGetName": 2,
        "nvmlDeviceGetUUID": 2,
        "nvmlDeviceGetPciInfo_v3": 2,
        "nvmlSystemGetDriverVersion": 1,
    }
    assert calls["nvmlDeviceGetHandleByIndex_v2"] == calls["nvmlDeviceGetMemoryInfo_v2"] == 6
    assert calls["nvmlDeviceGetComputeRunningProcesses_v3"] >= 6
    first, *later = readings
    assert all(r.gpus == first.gpus and r.driver_version == "570.124.06" for r in later)
    assert [g.bus_id for g in first.gpus] == ["00000000:18:00.0", "00000000:26:00.0"] and first.gpus[1].name


def test_a_fact_that_failed_is_asked_again_until_it_is_had(rig) -> None:
    calls = _counted(rig)
    rig.driver.fail("nvmlDeviceGetUUID", abi.ERROR_TIMEOUT, gpu=1)
    rig.driver.fail("nvmlSystemGetDriverVersion", abi.ERROR_TIMEOUT)
    failed = rig.source.read()
    assert failed.gpus[1].uuid is None and failed.driver_version is None and len(failed.errors) == 2
    rig.driver.clear("nvmlDeviceGetUUID")
    rig.driver.clear("nvmlSystemGetDriverVersion")
    had = [rig.source.read() for _ in range(2)]
    assert all(r.gpus[1].uuid and r.driver_version and r.errors == [] for r in had)
    assert calls["nvmlDeviceGetUUID"] == 2  # GPU 0 once, GPU 1 once it answered (the timeout never reached it)
    assert calls["nvmlDeviceGetName"] == 3  # GPU 1's name was asked again with its UUID


def test_memory_processes_and_a_lost_card_are_still_seen_every_sample(rig) -> None:
    before = rig.source.read()
    rig.clock.set(65)  # traffic grows the engine's activations
    rig.node.signal(2100, force=True)  # the engine's worker ends: its memory and its process go
    after = rig.source.read()
    assert before.processes and after.processes == []
    assert after.gpus[0].memory_used_bytes < before.gpus[0].memory_used_bytes
    rig.driver.fail("nvmlDeviceGetMemoryInfo_v2", abi.ERROR_GPU_IS_LOST, gpu=0)
    rig.node.gpus[1].lost = True
    lost = rig.source.read()
    assert [g.lost for g in lost.gpus] == [True, True]
    assert lost.gpus[0].name == before.gpus[0].name and lost.gpus[1].name is None  # as before the facts were kept


def test_closing_nvml_forgets_the_facts(rig) -> None:
    calls = _counted(rig)
    rig.source.read()
    rig.source.close()
    rig.source.read()
    assert calls["nvmlDeviceGetName"] == 4 and calls["nvmlSystemGetDriverVersion"] == 2

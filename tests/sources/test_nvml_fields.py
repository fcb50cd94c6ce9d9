"""One field, one device: what the NVML source does when a single reading or a single GPU fails, through the
real binding over the fake driver (issue 14, section 2)."""

from __future__ import annotations

import pytest

from gpumem_tui.demo import driver_abi as abi
from gpumem_tui.units import MIB

TWO_CARDS_TWO_ENGINES = """
[[gpus]]
model = "h100"
count = 2

[[engines]]
id = "a"
model = "llama-3.1-8b"
gpus = [0]

[[engines]]
id = "b"
model = "llama-3.1-8b"
gpus = [1]
port = 8001
"""

MIG_CARD_AND_PLAIN_CARD = """
[[gpus]]
model = "a100-sxm4-80gb"
mig_instances_mib = [40192, 19968]

[[gpus]]
model = "a100-sxm4-80gb"

[[processes]]
id = "job"
gpus = [0]
memory_gib = 8
mig_instance = 1
"""


@pytest.mark.parametrize("code", [abi.ERROR_NOT_SUPPORTED, abi.ERROR_TIMEOUT])
def test_an_unreadable_gpu_instance_id_keeps_every_gpu(make_rig, code):
    rig = make_rig(MIG_CARD_AND_PLAIN_CARD, at=5)
    rig.driver.fail("nvmlDeviceGetGpuInstanceId", code)
    reading = rig.source.read()
    mig_card, plain = reading.gpus
    assert [(m.gpu_instance_id, m.memory_total_bytes) for m in mig_card.mig_instances] == [
        (None, 40192 * MIB),
        (None, 19968 * MIB),
    ]
    assert plain.memory_total_bytes and not plain.lost and not mig_card.lost


@pytest.mark.parametrize(
    "symbol, fields",
    [
        ("nvmlDeviceGetName", ["name"]),
        ("nvmlDeviceGetUUID", ["uuid"]),
        ("nvmlDeviceGetPciInfo_v3", ["bus_id"]),
        ("nvmlDeviceGetUtilizationRates", ["utilization_gpu_percent", "utilization_memory_percent"]),
        ("nvmlDeviceGetTemperature", ["temperature_c"]),
        ("nvmlDeviceGetPowerUsage", ["power_w"]),
        ("nvmlDeviceGetMigMode", ["mig_enabled"]),
    ],
)
@pytest.mark.parametrize(
    "code, words",
    [
        (abi.ERROR_TIMEOUT, "Timeout"),
        (abi.ERROR_INSUFFICIENT_SIZE, "Insufficient Size"),
        (abi.ERROR_NO_DATA, "code 21"),  # the binding has no words for No Data
        (abi.ERROR_MEMORY, "Insufficient Memory"),
        (abi.ERROR_UNKNOWN, "Unknown Error"),
    ],
)
def test_one_failing_reading_makes_that_field_none_and_says_so(make_rig, symbol, fields, code, words):
    rig = make_rig(TWO_CARDS_TWO_ENGINES, version="550.144.03")  # no TemperatureV: the plain call is read
    rig.driver.fail(symbol, code, gpu=1)
    reading = rig.source.read()
    first, second = reading.gpus
    for name in fields:
        assert getattr(second, name) is None, name
        assert getattr(first, name) is not None, name
    assert not second.lost and second.error is None
    assert second.memory_used_bytes and second.power_limit_w == 700.0
    assert sorted(p.gpu_index for p in reading.processes) == [0, 1]  # GPU 1's processes are still read
    (error,) = reading.errors
    assert error.gpu_index == 1 and error.source == "nvml"
    assert error.message.startswith("GPU 1 ") and words in error.message


def test_a_timeout_on_memory_keeps_the_processes_and_the_other_readings(make_rig):
    rig = make_rig(TWO_CARDS_TWO_ENGINES)
    rig.driver.fail("nvmlDeviceGetMemoryInfo_v2", abi.ERROR_TIMEOUT, gpu=1)
    rig.driver.fail("nvmlDeviceGetMemoryInfo", abi.ERROR_TIMEOUT, gpu=1)
    reading = rig.source.read()
    second = reading.gpus[1]
    assert second.memory_used_bytes is None and second.memory_total_bytes is None
    assert second.name and second.temperature_c is not None and not second.lost
    assert sorted(p.gpu_index for p in reading.processes) == [0, 1]
    (error,) = reading.errors  # one field, one error: v2 and then v1 failing is memory failing
    assert error.gpu_index == 1 and error.message == "GPU 1 memory: Timeout"


def test_memory_v2_failing_once_is_read_with_v1_and_says_so(make_rig):
    """v1 answers where v2 timed out: memory is shown (reserved inside used this sample), and the one error
    says that, not that the reading is left out."""
    rig = make_rig(TWO_CARDS_TWO_ENGINES)
    rig.driver.fail("nvmlDeviceGetMemoryInfo_v2", abi.ERROR_TIMEOUT, gpu=1)
    reading = rig.source.read()
    second = reading.gpus[1]
    assert second.memory_used_bytes and second.memory_reserved_bytes is None
    (error,) = reading.errors
    assert error.message == "GPU 1 memory (v2): Timeout"
    assert error.hint == "read with memory v1 this sample: reserved memory is counted in used"


@pytest.mark.parametrize("field, symbol", [("name", "nvmlDeviceGetName"), ("uuid", "nvmlDeviceGetUUID")])
def test_a_name_or_uuid_that_is_not_utf8_is_shown_with_replacement_characters(rig, field, symbol):
    """The binding decodes strict UTF-8 and raises UnicodeDecodeError (not an NVMLError); the source reads
    the same bytes through the binding's undecoded call and shows what it can."""
    getattr(rig.driver, f"{field}_bytes")[1] = b"GPU-\xff\xfe-42" if field == "uuid" else b"NVIDIA H100 \xff\xfe"
    reading = rig.source.read()
    first, second = reading.gpus
    shown = getattr(second, field)
    assert shown is not None and "\N{REPLACEMENT CHARACTER}" in shown
    assert shown.startswith("GPU-" if field == "uuid" else "NVIDIA H100 ")
    assert getattr(first, field) and "\N{REPLACEMENT CHARACTER}" not in getattr(first, field)
    assert second.memory_used_bytes is not None and not second.lost and reading.errors == []
    with pytest.raises(UnicodeDecodeError):  # what the binding itself does with these bytes
        rig.binding.nvmlInit()
        getattr(rig.binding, symbol)(rig.binding.nvmlDeviceGetHandleByIndex(1))
    rig.binding.nvmlShutdown()


def test_a_value_error_inside_the_binding_makes_that_field_none(rig):
    """Not an NVMLError: a bus id the binding cannot decode (its struct getter decodes strict UTF-8)."""
    rig.driver.bus_id_bytes[1] = b"0000\xff:26:00.0"
    reading = rig.source.read()
    assert reading.gpus[1].bus_id is None and reading.gpus[0].bus_id == "00000000:18:00.0"
    (error,) = reading.errors
    assert error.gpu_index == 1 and "bus id" in error.message


# Denied GPUs: a cgroup (Slurm ConstrainDevices, a container's device list) lets NVML count every card of
# the node but open only some.


def test_a_gpu_this_process_may_not_open_is_not_accessible_not_lost(make_rig):
    rig = make_rig(TWO_CARDS_TWO_ENGINES)
    rig.driver.denied = {1}
    reading = rig.source.read()
    allowed, denied = reading.gpus
    assert allowed.accessible and allowed.memory_total_bytes and not allowed.lost
    assert denied.index == 1 and not denied.accessible and not denied.lost
    assert denied.memory_total_bytes is None and "not accessible" in (denied.error or "")
    assert [p.gpu_index for p in reading.processes] == [0]
    assert not any("lost" in e.message or "reset" in (e.hint or "") for e in reading.errors)


# Memory v2, decided per symbol and per call.


def test_one_gpu_refusing_memory_v2_leaves_v2_on_the_others(make_rig):
    rig = make_rig(
        """
[[gpus]]
model = "h100"
unsupported = ["memory_v2"]

[[gpus]]
model = "h100"
"""
    )
    for _ in range(2):
        v1, v2 = rig.source.read().gpus
        assert v1.memory_reserved_bytes is None and v1.memory_used_bytes == v1.memory_total_bytes - v1.memory_free_bytes
        assert v2.memory_reserved_bytes == 470 * MIB


@pytest.mark.parametrize("code", [abi.ERROR_ARGUMENT_VERSION_MISMATCH, abi.ERROR_FUNCTION_NOT_FOUND])
def test_a_driver_without_memory_v2_gets_v1_from_then_on(rig, code):
    rig.driver.fail("nvmlDeviceGetMemoryInfo_v2", code)
    assert [g.memory_reserved_bytes for g in rig.source.read().gpus] == [None, None]
    rig.driver.clear("nvmlDeviceGetMemoryInfo_v2")
    assert rig.source.read().gpus[0].memory_reserved_bytes is None  # a driver fact: not asked again
    assert rig.fresh_source().read().gpus[0].memory_reserved_bytes == 470 * MIB


# Remembered versions: a call the driver lacks is looked up once, not once a sample.


@pytest.mark.parametrize("version", ["470.256.02", "550.144.03"])
def test_a_missing_function_is_looked_up_once(make_rig, version):
    rig = make_rig(version=version)
    rig.source.read()
    first = dict(rig.driver.missed)
    assert first  # this release lacks something the binding asks for
    for _ in range(3):
        rig.source.read()
    assert rig.driver.missed == first

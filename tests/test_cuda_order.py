"""When this shell numbers GPUs the CUDA way, the app says once that NVML's indices are not CUDA's."""

from __future__ import annotations

from gpumem_tui.cuda_order import index_note

H100, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"


def test_cuda_visible_devices_renumbers_the_cards():
    note = index_note({"CUDA_VISIBLE_DEVICES": "2,3"}, [H100] * 4)
    assert note is not None and "CUDA_VISIBLE_DEVICES=2,3" in note and "bus id" in note


def test_identical_cards_in_the_default_order_need_no_note():
    assert index_note({}, [H100] * 8) is None
    assert index_note({"CUDA_DEVICE_ORDER": "FASTEST_FIRST"}, [H100] * 8) is None


def test_mixed_cards_are_numbered_fastest_first_unless_pci_bus_id():
    note = index_note({}, [A100, H100])
    assert note is not None and "FASTEST_FIRST" in note
    assert index_note({"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, [A100, H100]) is None


def test_the_value_from_the_environment_is_shown_literally():
    note = index_note({"CUDA_VISIBLE_DEVICES": "0\x1b[2J"}, [H100])
    assert note is not None and "\\x1b[2J" in note and "\x1b" not in note

"""PyTorch's out-of-memory message keeps its clues: who held the GPU, what was free, what was asked for."""

from __future__ import annotations

from pathlib import Path

from gpumem_tui.sources.engines.logparse import parse_log
from gpumem_tui.units import GIB, KIB, MIB

DATA = Path(__file__).resolve().parents[2] / "data" / "torch_oom"


def _oom(name: str):
    failures = parse_log((DATA / name).read_text(encoding="utf-8")).failures
    assert [f.kind for f in failures] == ["cuda_out_of_memory"]
    assert failures[0].oom is not None
    return failures[0]


def test_another_process_named_with_what_it_holds():
    """torch >= 2.2: `Process N has X memory in use` names who else holds the GPU."""
    failure = _oom("torch_2.x_other_process.log")
    oom = failure.oom
    assert [(p.pid, p.bytes) for p in oom.processes] == [(2684311, round(14.51 * GIB))]
    assert (oom.device, oom.tried_to_allocate_bytes) == (0, round(74.16 * GIB))
    assert (oom.total_capacity_bytes, oom.free_bytes) == (round(44.40 * GIB), round(29.89 * GIB))
    assert oom.allocated_by_pytorch_bytes == round(13.44 * GIB)
    assert oom.reserved_unallocated_bytes == round(738.96 * MIB)
    assert failure.message == "CUDA out of memory on GPU 0 allocating 74.16 GiB: 29.89 GiB free of 44.40 GiB"


def test_this_process_in_a_v1_engine_core_line():
    oom = _oom("vllm_0.8_v1_this_process.log").oom
    assert oom.this_process_bytes == round(5.02 * GIB) and oom.processes == []
    assert oom.reserved_unallocated_bytes == round(18.97 * MIB)


def test_torch_2_1_spelling_and_kib():
    """torch 2.1 wrote "total capacty"; sizes under 1 MiB are KiB."""
    oom = _oom("torch_2.1_capacty.log").oom
    assert oom.total_capacity_bytes == round(23.69 * GIB)
    assert oom.reserved_unallocated_bytes == round(755.50 * KIB)


def test_the_wording_before_torch_2_1():
    """`(GPU 0; T total capacity; A already allocated; F free; R reserved in total by PyTorch)`."""
    oom = _oom("torch_2.0_old_wording.log").oom
    assert (oom.device, oom.total_capacity_bytes, oom.free_bytes) == (0, round(44.56 * GIB), round(565.31 * MIB))
    assert oom.allocated_by_pytorch_bytes == round(27.91 * GIB)
    assert oom.reserved_by_pytorch_bytes == round(27.93 * GIB) and oom.reserved_unallocated_bytes is None


def test_a_wrapped_message_is_read_whole_and_ends_where_it_ends():
    """Lines of one message (a blank between, a sentence cut in two) join; a later, unrelated
    `Process N has` line after other output is not part of it."""
    oom = _oom("template_wrapped_private_pools.log").oom
    assert [p.pid for p in oom.processes] == [1463574, 1861983]
    assert (oom.device, oom.free_bytes) == (6, 448 * KIB)
    assert oom.private_pools_bytes == round(1.12 * GIB)
    assert oom.reserved_unallocated_bytes == round(145.27 * MIB)


def test_an_oom_without_the_allocator_message_has_no_clues():
    failures = parse_log("RuntimeError: CUDA error: out of memory\n").failures
    assert [(f.kind, f.message, f.oom) for f in failures] == [("cuda_out_of_memory", "CUDA out of memory", None)]

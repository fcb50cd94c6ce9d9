"""SGLang's defaults that depend on the GPU: chunked_prefill_size and the CUDA-graph batch sizes.

`gpu_mib` is the card's capacity as nvidia-smi reports it (`get_device_memory_capacity`, MiB), not free
memory. Read in server_args.py and cuda_graph_runner.py of the wheels 0.4.6, 0.4.6.post2, 0.4.7, 0.4.8,
0.5.2, 0.5.3 and 0.5.6 (reference section 3)."""

from __future__ import annotations

from gpumem_tui.planner.sglang.versions import RC, Rules

MIB_PER_GIB = 1024


def chunked_prefill_default(rules: Rules, gpu_mib: int) -> int:
    """8192 (2048 under 25,000 MiB from 0.3.6) until 0.4.8, 16384 above 180,000 MiB from 0.4.7; from 0.4.9
    by class: 2048 under 35 GiB, 8192 under 160 GiB, 16384 above; from 0.5.3 4096 under 60 GiB."""
    gib = gpu_mib / MIB_PER_GIB
    if rules.at_least(0, 4, 9):
        if gib < 35:
            return 2048
        if rules.version >= (0, 5, 3, RC) and gib < 60:
            return 4096
        return 8192 if gib < 160 else 16384
    if rules.at_least(0, 4, 7) and gpu_mib > 180_000:
        return 16384
    return 2048 if rules.at_least(0, 3, 6) and gpu_mib < 25_000 else 8192


def cuda_graph_max_bs_default(rules: Rules, gpu_mib: int, tp: int) -> int:
    """The largest batch captured when `--cuda-graph-max-bs` is not given. Small GPUs get a set value
    (0.3.6: 4; 0.4.x: 8, or 80 at TP >= 4; under 25,000 MiB, under 35 GiB from 0.4.8); otherwise the capture
    list ends at 160, extended to 256 above 80 GiB (0.4.6; 96 GiB from 0.4.6.post2) and to 512 above 180,000
    MiB (0.4.7; 160,000 from 0.4.8); from 0.5.3 set by class (server_args `_handle_gpu_memory_settings`)."""
    gib = gpu_mib / MIB_PER_GIB
    if rules.version >= (0, 5, 3, RC):
        return _by_class(rules, gib, tp)
    small = gib < 35 if rules.at_least(0, 4, 8) else gpu_mib < 25_000
    if small and rules.at_least(0, 4, 0):
        return 8 if tp < 4 else 80
    if small and rules.at_least(0, 3, 6):
        return 4
    return _capture_list_top(rules, gpu_mib)


def _capture_list_top(rules: Rules, gpu_mib: int) -> int:
    if rules.at_least(0, 4, 7) and gpu_mib > (160_000 if rules.at_least(0, 4, 8) else 180_000):
        return 512
    wide = gpu_mib > 96 * 1024 if rules.version >= (0, 4, 6, 2) else gpu_mib > 81920
    return 256 if rules.at_least(0, 4, 6) and wide else 160


def _by_class(rules: Rules, gib: float, tp: int) -> int:
    if gib < 20:
        return 8
    if gib < 35:
        return (24 if rules.at_least(0, 5, 6) else 16) if tp < 4 else 80  # 24 read at 0.5.6, 16 at 0.5.3
    if gib < 60:
        return 32 if tp < 4 else 160
    if gib < 160:
        return 256 if tp < 4 else 512
    return 512

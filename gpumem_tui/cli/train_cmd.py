"""`gpumem-tui train` (full / LoRA / QLoRA memory) and `gpumem-tui offload` (CPU-offload speed, KV
offload break-even). The options are train_opts.py's."""

from __future__ import annotations

import argparse
import math

from gpumem_tui.cli.errors import UsageError
from gpumem_tui.cli.output import console, print_json, say, table
from gpumem_tui.cli.plan_resolve import Resolved
from gpumem_tui.planner.kv import sequence_bytes_per_gpu
from gpumem_tui.planner.offload import PCIE_X16_GBPS, kv_offload_breakeven, offload_estimate, prefill_flops
from gpumem_tui.planner.parallel import split_problem
from gpumem_tui.planner.params import count_params
from gpumem_tui.planner.training import adapter_training, full_training
from gpumem_tui.planner.weights import weights_bytes
from gpumem_tui.units import fmt_both


def run_train(args: argparse.Namespace) -> int:
    found = Resolved(args)
    if args.mode == "full":
        estimate = full_training(found.model, args.activations)
    else:
        base = found.catalog.format(args.weights or ("nf4" if args.mode == "qlora" else "bf16"))
        estimate = adapter_training(found.model, base, args.rank, args.batch, args.sequence, args.mode)
    capacity = args.gpu_memory or found.gpu.capacity_bytes
    gpus_needed = math.ceil(estimate.total_bytes / capacity)
    if args.json:
        print_json(
            {
                **estimate.model_dump(),
                "gpu": found.gpu.key,
                "capacity_bytes": capacity,
                "gpus_needed_sharded": gpus_needed,
                "fits_one_gpu": gpus_needed <= 1,
            }
        )
        return 0
    rows = [
        ["weights", fmt_both(estimate.weights_bytes)],
        [f"trained state ({estimate.trainable_params / 1e9:,.3f} B params)", fmt_both(estimate.trainable_state_bytes)],
        ["activations", fmt_both(estimate.activations_bytes)],
        ["total", fmt_both(estimate.total_bytes)],
    ]
    out = console()
    out.print(table(f"{found.model.id}: {estimate.mode} training", ["part", "memory"], rows))
    say(
        out,
        f"On {found.gpu.key} ({fmt_both(capacity)}): "
        + (
            "fits one GPU."
            if gpus_needed <= 1
            else f"needs at least {gpus_needed} GPUs with everything sharded (FSDP / ZeRO-3)."
        ),
        style="bold",
    )
    return 0


def run_offload(args: argparse.Namespace) -> int:
    found = Resolved(args)
    gpu, model = found.gpu, found.model
    if not gpu.mem_bandwidth_gbps:
        raise UsageError(f"{gpu.key} has no verified memory bandwidth in the catalog; pick another GPU")
    link = args.link_gbps if args.link_gbps is not None else PCIE_X16_GBPS.get(gpu.pcie_gen or 0)
    if not link:
        raise UsageError(f"{gpu.key}: PCIe generation unknown; give --link-gbps")
    problem = split_problem(model, args.gpus)
    if problem:
        raise UsageError(f"--gpus {args.gpus}: {problem}")
    total = weights_bytes(count_params(model), found.format)
    capacity = args.gpu_memory or gpu.capacity_bytes
    if args.resident is not None and args.resident > capacity:
        raise UsageError(
            f"--resident {fmt_both(args.resident)}: more than the {fmt_both(capacity)} one {gpu.key} holds"
        )
    kv_one = sequence_bytes_per_gpu(model, args.context, "auto", args.gpus)
    resident = args.resident if args.resident is not None else int(capacity * 0.9) - 4 * 10**9 - kv_one
    speed = offload_estimate(total, args.gpus, resident, gpu.mem_bandwidth_gbps, link)
    kv = _breakeven(found, args.context, link, args.gpus)
    if args.json:
        print_json(
            {
                "weights_bytes": total,
                "link_gbps": link,
                "offload": speed.model_dump(),
                "kv_offload": kv.model_dump() if kv else None,
            }
        )
        return 0
    out = console()
    say(
        out,
        f"{model.id} in {found.format.name} ({fmt_both(total)}) on {args.gpus} x {gpu.key}: "
        f"{fmt_both(speed.resident_bytes_per_gpu)} per GPU from HBM at {gpu.mem_bandwidth_gbps:,.0f} GB/s, "
        f"{fmt_both(speed.offloaded_bytes_per_gpu)} over the link at {link:,.0f} GB/s",
    )
    say(
        out,
        f"  {speed.hbm_seconds * 1e3:,.1f} ms from HBM + {speed.link_seconds * 1e3:,.1f} ms over the link = "
        f"{speed.tokens_per_second:,.2f} tokens/s for one conversation; the GPU is busy "
        f"{speed.gpu_busy_fraction:.1%} of the time",
        style="bold",
    )
    if kv:
        say(
            out,
            f"KV offload at {args.context:,} tokens: fetch {fmt_both(kv.kv_bytes)} per GPU in "
            f"{kv.fetch_seconds * 1e3:,.1f} ms"
            f" vs recompute in {kv.recompute_seconds * 1e3:,.1f} ms; fetching wins on links faster than "
            f"{kv.breakeven_link_gbps:,.2f} GB/s",
        )
    return 0


def _breakeven(found: Resolved, context: int, link: float, gpus: int):
    """Recompute runs on all GPUs of the split; the fetch crosses each GPU's own link in parallel."""
    tflops = found.gpu.bf16_tflops_dense
    if not tflops:
        return None
    model = found.model
    flops = prefill_flops(count_params(model).active, model.layers, model.attention_heads * model.head_size, context)
    kv_per_gpu = sequence_bytes_per_gpu(model, context, "auto", gpus)
    return kv_offload_breakeven(context, kv_per_gpu, flops / gpus, tflops, link)

"""`gpumem-tui train` and `gpumem-tui offload`: the options; the actions (train_cmd.py) are imported
when they run."""

from __future__ import annotations

import argparse

from gpumem_tui.cli.lazy import action
from gpumem_tui.cli.planargs import add_model_options, count, fraction, number, size


def train_options(train: argparse.ArgumentParser) -> None:
    add_model_options(train)
    train.add_argument(
        "--mode",
        choices=["full", "lora", "qlora"],
        default="full",
        help="full: weights, gradients and Adam states; lora / qlora: a frozen base and adapters",
    )
    train.add_argument(
        "--activations",
        type=fraction,
        default=0.2,
        metavar="PCT",
        help="full training: activations as a share of weights+states (default 20%%)",
    )
    train.add_argument("--rank", type=count(1), default=16, help="LoRA rank (default 16)")
    train.add_argument("--batch", type=count(1), default=1, help="LoRA/QLoRA micro-batch (default 1)")
    train.add_argument("--sequence", type=count(1), default=2048, help="LoRA/QLoRA tokens per sample")
    train.set_defaults(run=action("train_cmd:run_train"))


def offload_options(offload: argparse.ArgumentParser) -> None:
    add_model_options(offload)
    offload.add_argument("--gpus", type=count(1), default=1, metavar="N", help="GPUs in the split (default 1)")
    offload.add_argument(
        "--resident",
        type=size,
        metavar="SIZE",
        help="weights kept in each GPU's memory, at most its capacity (default: capacity x 0.9 - 4GB - one context "
        "of KV)",
    )
    offload.add_argument(
        "--link-gbps",
        type=number(0.1, 10_000, "GB/s"),
        metavar="GB/s",
        help="CPU-GPU link, 0.1 to 10,000 (default: PCIe x16 of the GPU)",
    )
    offload.add_argument(
        "--context",
        type=count(1),
        default=8192,
        metavar="TOKENS",
        help="tokens of one conversation, for its KV cache (default 8,192)",
    )
    offload.set_defaults(run=action("train_cmd:run_offload"))

"""Plan options shared by `plan`, `offload`, `train` and the TUI: model, GPU, formats, load."""

from __future__ import annotations

import argparse
import math

from gpumem_tui.catalog import Catalog, GpuSpec, ModelSpec, load_catalog
from gpumem_tui.catalog.hfconfig import find_config, load_config, model_from_config, model_id_for
from gpumem_tui.catalog.safetensors import CheckpointBytes, checkpoint_bytes
from gpumem_tui.cli.errors import UsageError
from gpumem_tui.overlays import ManualPlan
from gpumem_tui.planner.dtypes import kv_dtype_bytes
from gpumem_tui.planner.records import PlanInput
from gpumem_tui.units import GIB, parse_fraction, parse_size


def count(minimum: int, maximum: int = 10**9):
    """An argparse type for whole numbers from `minimum` to `maximum`, with a plain error."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace(",", "").replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"{text!r} must be from {minimum:,} to {maximum:,}")
        return value

    return parse


def seconds(minimum: float = 0.0, maximum: float = 10**7):
    """An argparse type for a finite number of seconds in [minimum, maximum]."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not (math.isfinite(value) and minimum <= value <= maximum):
            raise argparse.ArgumentTypeError(f"{text!r} must be from {minimum:g} to {maximum:g} seconds")
        return value

    return parse


def size(text: str) -> int:
    """A size above zero with its unit (a GPU of 0 bytes plans nothing)."""
    try:
        value = parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0")
    return value


def fraction(text: str) -> float:
    try:
        return parse_fraction(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_model_options(parser: argparse.ArgumentParser, gpu_required: bool = True) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", metavar="ID", help="catalog model id or alias (see `gpumem-tui catalog`)")
    which.add_argument("--config", metavar="PATH",
                       help="a config.json, a model directory, or an HF id in the local cache")
    gpu = parser.add_mutually_exclusive_group(required=False)
    gpu.add_argument("--gpu", metavar="KEY", help="catalog GPU key or alias, e.g. h100, h200, a100, l40s")
    parser.add_argument("--gpu-memory", type=size, metavar="SIZE",
                        help="override the card's capacity, e.g. 80GB (default: what the card reports)")
    parser.add_argument("--weights", metavar="FMT", help="weight format: bf16, fp8, int4, nf4, mxfp4, ... "
                        "(default: the checkpoint's own)")
    parser.add_argument("--catalog", action="append", default=[], metavar="DIR", help="extra catalog directory")
    parser.add_argument("--json", action="store_true", help="print JSON")


def add_load_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", type=count(1), metavar="N", help="GPUs in the split (default: the fewest of 1/2/4/8)")
    parser.add_argument("--kv-dtype", default="auto", metavar="DT", help="KV-cache dtype: auto (16-bit), fp8, ...")
    parser.add_argument("--context", type=count(1), default=8192, metavar="TOKENS", help="tokens per conversation")
    parser.add_argument("--users", type=count(0), default=1, metavar="N", help="conversations at once")
    parser.add_argument("--utilization", type=fraction, default=0.9, metavar="F", help="share of each GPU to fill")
    parser.add_argument("--overhead", default="4GB", metavar="SIZE|PCT",
                        help="runtime overhead per GPU: a size (4GB) or a share of weights+KV (10%%)")
    parser.add_argument("--kv-heads", type=count(1), metavar="N",
                        help="override the model's KV heads (e.g. = attention heads for the no-GQA estimate)")


class Resolved:
    """What the options name: the catalog, the model (and where it came from), the GPU, the checkpoint bytes."""

    def __init__(self, args: argparse.Namespace):
        self.catalog: Catalog = load_catalog(args.catalog)
        self.warnings: list[str] = []
        self.checkpoint: CheckpointBytes | None = None
        self.model = self._model(args)
        self.gpu = self._gpu(args)
        self.format = self.catalog.format(args.weights or default_format(self.model))

    def _model(self, args: argparse.Namespace) -> ModelSpec:
        if args.model is not None:
            if not args.model.strip():
                raise UsageError("--model needs a name (see `gpumem-tui catalog`)")
            return self.catalog.model(args.model)
        if not args.config.strip():
            raise UsageError("--config needs a path or an HF id")
        path = find_config(args.config)
        config = load_config(path)
        spec, self.warnings = model_from_config(config, model_id_for(path, config))
        self.checkpoint = checkpoint_bytes(path.parent)
        return spec

    def _gpu(self, args: argparse.Namespace) -> GpuSpec:
        if args.gpu:
            return self.catalog.gpu(args.gpu)
        if args.gpu_memory:
            return GpuSpec(key=f"{args.gpu_memory / 1e9:g}GB-GPU", nominal_gib=args.gpu_memory / GIB)
        raise UsageError("name a GPU with --gpu KEY or give its memory with --gpu-memory SIZE")


def default_format(model: ModelSpec) -> str:
    """The format the published weights ship in; 16-bit otherwise."""
    if model.checkpoint_format:
        return model.checkpoint_format
    return model.native_dtype if model.native_dtype in ("bf16", "fp16") else "bf16"


def plan_input(args: argparse.Namespace, found: Resolved) -> PlanInput:
    kv_dtype_bytes(args.kv_dtype)
    overhead = str(args.overhead).strip()
    fixed, share = (4 * 10**9, parse_fraction(overhead)) if overhead.endswith("%") else (parse_size(overhead), None)
    exact = found.checkpoint.total_bytes if found.checkpoint and not args.weights else None
    return PlanInput(model=found.model, gpu=found.gpu, weights_format=found.format, kv_dtype=args.kv_dtype,
                     context=args.context, users=args.users, gpus=args.gpus, utilization=args.utilization,
                     overhead_bytes=fixed, overhead_fraction=share, capacity_bytes=args.gpu_memory,
                     kv_heads=args.kv_heads, weights_bytes_override=exact)


def manual_plan(args: argparse.Namespace, catalog: Catalog) -> ManualPlan | None:
    """The plan the plan options describe (--model and what goes with it), or None without --model."""
    if not args.model:
        for flag in ("quantization", "context", "gpus"):
            if getattr(args, flag) is not None:
                raise UsageError(f"--{flag} describes a plan: give --model too")
        return None
    return ManualPlan(
        model=catalog.model(args.model),
        quantization=args.quantization,
        kv_cache_dtype=args.kv_dtype,
        max_model_len=args.context,
        users=args.users,
        utilization=args.utilization,
        tp=args.gpus,
        version=args.vllm_version,
    )

"""What the plan options name, resolved when a command runs: the catalog's model and GPU, the checkpoint's
bytes, the plan input (`plan`, `train`, `offload`; a plan by hand: node_plan.py)."""

from __future__ import annotations

import argparse

from gpumem_tui.catalog import Catalog, GpuSpec, LookupFailed, ModelMatch, ModelSpec, load_catalog
from gpumem_tui.catalog.hfconfig import read_model_config
from gpumem_tui.catalog.safetensors import CheckpointBytes, checkpoint_bytes
from gpumem_tui.cli.errors import UsageError
from gpumem_tui.cli.planargs import fields
from gpumem_tui.planner.records import PlanInput
from gpumem_tui.planner.serving import resolve_weights
from gpumem_tui.units import GIB


class Resolved:
    """What the options name: the catalog, the model (and where it came from), the GPU, the checkpoint bytes."""

    def __init__(self, args: argparse.Namespace):
        self.catalog: Catalog = load_catalog(args.catalog)
        self.warnings: list[str] = []
        self.checkpoint: CheckpointBytes | None = None
        self.model = self._model(args)
        self.gpu = self._gpu(args)
        self.format, self.quantization = resolve_weights(self.catalog, self.model, args.weights)

    def _model(self, args: argparse.Namespace) -> ModelSpec:
        spec, self.warnings, self.checkpoint = self.read_model(args, self.catalog)
        return spec

    @staticmethod
    def read_model(args: argparse.Namespace, catalog: Catalog) -> tuple[ModelSpec, list[str], CheckpointBytes | None]:
        """The model --model names, or the one --config describes (with its warnings and checkpoint bytes)."""
        if args.model is not None:
            if not args.model.strip():
                raise UsageError("--model needs a name (see `gpumem-tui catalog`)")
            found = named_model(catalog, args.model)
            return found.spec, [found.note] if found.note else [], None
        if not args.config.strip():
            raise UsageError("--config needs a path or an HF id")
        spec, warnings, path = read_model_config(args.config)
        return spec, warnings, checkpoint_bytes(path.parent)

    @staticmethod
    def model_of(args: argparse.Namespace, catalog: Catalog) -> ModelSpec:
        return Resolved.read_model(args, catalog)[0]

    def _gpu(self, args: argparse.Namespace) -> GpuSpec:
        if args.gpu:
            return self.catalog.gpu(args.gpu)
        if args.gpu_memory:
            return GpuSpec(key=f"{args.gpu_memory / 1e9:g}GB-GPU", nominal_gib=args.gpu_memory / GIB)
        raise UsageError("name a GPU with --gpu KEY or give its memory with --gpu-memory SIZE")


def named_model(catalog: Catalog, name: str) -> ModelMatch:
    """The model --model names, by the catalog's one resolver; a name it does not find is a usage error that
    names the nearest, or says where the known names are listed when none is near."""
    try:
        return catalog.match_model(name)
    except LookupFailed as exc:
        if exc.suggestions:
            raise
        raise UsageError(
            f"{exc}: none in the catalog is close (`gpumem-tui catalog` lists them; --config PATH "
            "plans a model from its config.json)"
        ) from None


def plan_input(args: argparse.Namespace, found: Resolved) -> PlanInput:
    fixed, share = args.overhead
    exact = found.checkpoint.total_bytes if found.checkpoint and not args.weights else None
    return PlanInput(
        model=found.model,
        gpu=found.gpu,
        weights_format=found.format,
        overhead_bytes=fixed,
        overhead_fraction=share,
        capacity_bytes=args.gpu_memory,
        weights_bytes_override=exact,
        **fields(args, "kv_dtype", "context", "users", "gpus", "utilization", "kv_heads"),
    )

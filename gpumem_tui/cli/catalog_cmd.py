"""`gpumem-tui catalog [models|gpus|formats]`: what the catalog holds (the options: catalog_opts.py)."""

from __future__ import annotations

import argparse

from gpumem_tui.catalog import load_catalog
from gpumem_tui.cli.output import console, print_json, table
from gpumem_tui.planner.params import count_params
from gpumem_tui.units import GB, GIB


def run(args: argparse.Namespace) -> int:
    catalog = load_catalog(args.catalog)
    rows = {"models": _models, "gpus": _gpus, "formats": _formats}[args.kind](catalog)
    if args.json:
        print_json(rows)
        return 0
    headers = list(rows[0]) if rows else []
    cells = [[_cell(value) for value in row.values()] for row in rows]
    console().print(table(None, headers, cells))
    return 0


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _models(catalog) -> list[dict]:
    rows = []
    for spec in catalog.models.values():
        params = count_params(spec)
        rows.append(
            {
                "id": spec.id,
                "aliases": spec.names[1:],  # its short names, then the repositories of its architecture
                "params_b": round(params.total / 1e9, 2),
                "active_b": round(params.active / 1e9, 2),
                "layers": spec.layers,
                "kv_heads": spec.kv_heads,
                "head_dim": spec.head_size,
                "attention": _attention_kind(spec),
                "max_context": spec.max_context,
            }
        )
    return rows


def _attention_kind(spec) -> str:
    """MLA, or which layers attend to less than everything: a sliding window or a chunk (Llama 4)."""
    if spec.mla:
        return "MLA"
    if spec.sliding_window:
        return "sliding+full"
    if spec.chunked_attention:
        return "chunked+full" if spec.chunked_attention.full_every else "chunked"
    return "full"


def _gpus(catalog) -> list[dict]:
    return [
        {
            "key": g.key,
            "aliases": g.aliases,
            "nvml_name": g.nvml_names[0] if g.nvml_names else None,
            "total_mib": g.total_mib,
            "capacity_gb": round(g.capacity_bytes / GB, 1),
            "capacity_gib": round(g.capacity_bytes / GIB, 2),
            "bandwidth_gbps": g.mem_bandwidth_gbps,
            "bf16_tflops": g.bf16_tflops_dense,
            "link": f"NVLink {g.nvlink_gbps_per_direction:g} GB/s"
            if g.nvlink_gbps_per_direction
            else (f"PCIe gen{g.pcie_gen}" if g.pcie_gen else None),
        }
        for g in catalog.gpus.values()
    ]


def _formats(catalog) -> list[dict]:
    return [
        {
            "name": f.name,
            "aliases": f.aliases,
            "bytes_per_param": round(f.bits_per_param / 8, 4),
            "scope": f.scope,
            "fit_kv_dtype": f.kv_dtype,
            "description": f.description,
        }
        for f in catalog.formats.values()
    ]

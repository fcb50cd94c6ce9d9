"""The catalog: models, GPUs and weight formats as validated records, plus offline config.json import."""

from gpumem_tui.catalog.loader import Catalog, CatalogError, LookupFailed, load_catalog
from gpumem_tui.catalog.names import ModelMatch
from gpumem_tui.catalog.schema import FormatSpec, GpuSpec, MlaSpec, ModelSpec, MoeSpec, SlidingWindowSpec

__all__ = [
    "Catalog",
    "CatalogError",
    "FormatSpec",
    "GpuSpec",
    "LookupFailed",
    "MlaSpec",
    "ModelMatch",
    "ModelSpec",
    "MoeSpec",
    "SlidingWindowSpec",
    "load_catalog",
]

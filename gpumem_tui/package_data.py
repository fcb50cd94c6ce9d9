"""Where the data shipped with the package lies: the catalog's TOML files and, under them, the demo's
scenarios. Light on purpose: the command line lists the scenarios to write its help."""

from __future__ import annotations

from pathlib import Path


def packaged_dir() -> Path:
    """The catalog shipped inside the wheel, or the repository's `catalog/` in a source checkout."""
    inside = Path(__file__).resolve().parent / "_catalog"
    return inside if inside.is_dir() else Path(__file__).resolve().parents[1] / "catalog"

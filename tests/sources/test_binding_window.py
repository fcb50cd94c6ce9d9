"""The NVML binding's version window in pyproject.toml: the installed binding is inside it, and it keeps out
the releases whose process structs disagree with the driver's (nvidia-ml-py 12.535.77 reads 32-byte entries
where drivers outside 535.43-535.86 write 24) or that cannot fall back on a driver without the v3 calls."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def binding() -> Requirement:
    dependencies = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    return next(r for r in map(Requirement, dependencies) if r.name == "nvidia-ml-py")


def test_the_installed_binding_is_inside_the_window():
    installed = version("nvidia-ml-py")
    assert binding().specifier.contains(installed), f"nvidia-ml-py {installed} outside {binding().specifier}"


def test_the_floor_keeps_out_the_binding_with_the_reverse_struct_mismatch():
    window = binding().specifier
    # 12.535.77: 32-byte v3 entries on every driver; 12.535.108-161: 24 bytes, but no _v2 call to fall back
    # on where the driver has no v3 symbol (R470), so the process list comes back empty there
    for outside in ("12.535.77", "12.535.108", "12.535.161"):
        assert not window.contains(outside), outside
    assert window.contains("12.550.52")  # the first with 24-byte v3 entries and the _v2 fallback


def test_the_next_major_binding_is_kept_out():
    window = binding().specifier
    assert window.contains("13.615.71")
    assert not window.contains("14.0.0")

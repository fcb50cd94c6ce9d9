"""The scenarios shipped with the package, by name, and the one `--demo` shows when none is named. Light on
purpose (no pydantic, no simulator): every command's help lists them."""

from __future__ import annotations

from pathlib import Path

from gpumem_tui.package_data import packaged_dir

DEFAULT_SCENARIO = "healthy-8b"
"""What `--demo` shows when no scenario is named, in the TUI, `snapshot` and `check` alike."""


def scenario_dir() -> Path:
    """Scenarios shipped with the package (`catalog/scenarios/`)."""
    return packaged_dir() / "scenarios"


def scenario_names() -> list[str]:
    return sorted(path.stem for path in scenario_dir().glob("*.toml"))

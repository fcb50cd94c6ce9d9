"""The Textual app: the only package besides cli/ that imports textual."""

from gpumem_tui.app.app import GpuMemApp

__all__ = ["GpuMemApp"]

"""`python -m gpumem_tui` runs the command line."""

from gpumem_tui.cli import program

raise SystemExit(program())

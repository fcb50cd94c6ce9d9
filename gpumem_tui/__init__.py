"""gpumem-tui: plan LLM-serving GPU memory and compare the plan with what is actually there."""

__version__ = "0.1.0"

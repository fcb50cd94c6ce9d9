"""vLLM's own startup sizing, release by release: what its log will say before it is launched."""

from gpumem_tui.planner.vllm.predict import EnginePrediction, EngineSettings, predict
from gpumem_tui.planner.vllm.versions import DEFAULT_VERSION

__all__ = ["DEFAULT_VERSION", "EnginePrediction", "EngineSettings", "predict"]

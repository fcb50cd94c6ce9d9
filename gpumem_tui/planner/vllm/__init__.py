"""vLLM's own startup sizing, release by release: what its log will say before it is launched.

The names below are loaded when first asked for (`lazy_names`): the command line reads `versions` (the
default release) to write its help without loading the predictor."""

from typing import TYPE_CHECKING

from gpumem_tui.lazy_names import lazy_names
from gpumem_tui.planner.vllm.versions import DEFAULT_VERSION

if TYPE_CHECKING:
    from gpumem_tui.planner.vllm.predict import EnginePrediction, EngineSettings, predict

__all__ = ["DEFAULT_VERSION", "EnginePrediction", "EngineSettings", "predict"]
__getattr__ = lazy_names(__name__, {"EnginePrediction": "records", "EngineSettings": "records", "predict": "predict"})

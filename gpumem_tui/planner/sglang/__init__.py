"""SGLang's own startup sizing, release by release: the fraction it picks, its KV pool and its log.

The names below are loaded when first asked for (`lazy_names`): the command line reads `versions` (the
default release) to write its help without loading the predictor."""

from typing import TYPE_CHECKING

from gpumem_tui.lazy_names import lazy_names
from gpumem_tui.planner.sglang.versions import DEFAULT_VERSION

if TYPE_CHECKING:
    from gpumem_tui.planner.sglang.predict import predict
    from gpumem_tui.planner.sglang.records import SglangPrediction, SglangSettings

__all__ = ["DEFAULT_VERSION", "SglangPrediction", "SglangSettings", "predict"]
__getattr__ = lazy_names(__name__, {"SglangPrediction": "records", "SglangSettings": "records", "predict": "predict"})

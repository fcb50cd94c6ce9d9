"""How a start ended, predicted against what the log shows: agreement, or a disagreement in words.

A prediction of failure on a log that shows a complete start is a finding about the prediction (the
model it makes of this engine and model), never about the node: the log wins and the words say so.
"""

from __future__ import annotations

from typing import Literal, Protocol

from gpumem_tui.planner.vllm.risks import OOM_AT_START
from gpumem_tui.records import Record

LogEnd = Literal["started", "failed", "not shown"]
NODE_KINDS = ("free_memory_below_requested",)
"""Failures the node causes (other processes hold the GPU), which settings alone cannot predict."""


class Predicted(Protocol):
    """What an engine's prediction says of the start: vLLM's (planner/vllm) or SGLang's (planner/sglang)."""

    @property
    def failures(self) -> list[str]: ...

    @property
    def warnings(self) -> list[str]: ...


class Outcome(Record):
    """The log's end of the start, the predicted one, whether they agree (None when the log does not
    show it), and one sentence that says it."""

    log: LogEnd
    predicted: Literal["starts", "fails"]
    agree: bool | None
    predicted_failures: list[str]
    says: str


def predicted_failures(prediction: Predicted) -> list[str]:
    """What the prediction says will stop the start: its failures and its out-of-memory warnings."""
    return [*prediction.failures, *(w for w in prediction.warnings if OOM_AT_START in w)]


def outcome(prediction: Predicted, log: dict, model: str) -> Outcome:
    """`log` is the startup record as a dict: `startup_complete` and `failures` ({kind, message})."""
    failures = predicted_failures(prediction)
    logged = log.get("failures") or []
    end: LogEnd = "started" if log.get("startup_complete") else ("failed" if logged else "not shown")
    predicted = "fails" if failures else "starts"
    reason = failures[0] if failures else ""
    if end == "not shown":
        agree = None
        says = (
            f"predicted to fail: {reason} (the log does not show how the start ended)"
            if failures
            else "predicted to start; the log does not show how the start ended"
        )
    elif end == "started" and failures:
        agree = False
        says = (
            f"the log shows a complete start, but the prediction expected a failed one ({_why(reason)}): "
            f"the prediction is wrong for {model} with these settings, not the node"
        )
    elif end == "failed" and not failures and all(f["kind"] in NODE_KINDS for f in logged):
        agree = None
        says = (
            f"the log shows a start stopped by the node ({logged[0]['message']}); the prediction from the "
            "log's settings assumes a free GPU, so it neither agrees nor disagrees"
        )
    elif end == "failed" and not failures:
        first = logged[0]
        agree = False
        says = (
            f"the log shows a failed start ({first['kind']}: {first['message']}), but the prediction "
            f"expected a clean start: the prediction is wrong for {model} with these settings"
        )
    else:
        agree = True
        says = (
            "the log shows a complete start, as predicted"
            if end == "started"
            else (f"the log shows a failed start, as predicted: {reason}")
        )
    return Outcome(log=end, predicted=predicted, agree=agree, predicted_failures=failures, says=says)


def _why(failure: str) -> str:
    """A predicted failure's reason without its advice: the log shows the advice is not needed."""
    return failure.split(f": {OOM_AT_START}")[0].split("; ")[0]

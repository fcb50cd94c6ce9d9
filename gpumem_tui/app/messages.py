"""Messages the node screen's refresh worker posts: a new sample, or a refresh that failed."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from gpumem_tui.app.view import Judged
from gpumem_tui.models import Sample


@dataclass
class SampleReady(Message):
    """A refresh finished; only the newest one matters when the screen is behind."""

    sample: Sample
    judged: Judged
    """The sample judged in the worker: plans, findings, GPUs and engines laid out."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SampleReady)


@dataclass
class RefreshFailed(Message):
    """A refresh raised; the screen keeps the last sample and shows why."""

    error: str

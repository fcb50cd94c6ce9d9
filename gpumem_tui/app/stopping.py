"""What `k` does and says, without Textual: the process it would stop (pid, name, user, command, GPU memory in
the screen's unit), the question asked before each signal, the signal sent and the wait for the process to
end, and the outcome as the screen says it and the recording keeps it (`replay.Signalled`)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Literal

from gpumem_tui.models import ProcessRecord, Sample
from gpumem_tui.sources.replay import Signalled
from gpumem_tui.sources.signals import StopFailed, Stopper, signal_name
from gpumem_tui.text import literal
from gpumem_tui.units import Unit, fmt

WAIT_S = 5.0
"""How long the screen waits after SIGTERM before it offers SIGKILL: a process that cleans up on SIGTERM
(a vLLM engine frees its workers) takes a few seconds."""
POLL_S = 0.1
Result = Literal["ended", "running", "gone", "failed"]


@dataclass(frozen=True)
class Target:
    """A process as `k` names it: its rows in the sample, one per GPU it is on. Its words are literal."""

    rows: tuple[ProcessRecord, ...]

    @property
    def first(self) -> ProcessRecord:
        return self.rows[0]

    @property
    def pid(self) -> int:
        return self.first.pid

    @property
    def name(self) -> str:
        return literal(self.first.name, "?")

    @property
    def user(self) -> str:
        return literal(self.first.user, "?")

    @property
    def command(self) -> str:
        return literal(self.first.command, "?")

    def held(self, unit: Unit, between: str = ", ") -> str:
        """`20.00 GiB on GPU 0`, each GPU it is on."""
        return between.join(f"{fmt(p.gpu_memory_bytes, unit, 2)} on GPU {p.device}" for p in self.rows)

    @property
    def who(self) -> str:
        return f"pid {self.pid} ({self.name}, user {self.user})"


def target(sample: Sample | None, pid: int) -> Target | None:
    """The process `pid` as the latest sample shows it; None when it is not in it."""
    rows = tuple(p for p in sample.processes if p.pid == pid) if sample else ()
    return Target(rows) if rows else None


@dataclass(frozen=True)
class Question:
    """What is asked before a signal: the question, the facts of the process, and what the signal does."""

    question: str
    facts: tuple[tuple[str, str], ...]
    note: str


def asking(process: Target, unit: Unit, force: bool, wait_s: float = WAIT_S) -> Question:
    """The question before a signal: what it goes to, and what it does."""
    facts = (
        ("process", f"{process.name}, pid {process.pid}"),
        ("user", process.user),
        ("command", process.command),
        ("GPU memory", process.held(unit)),
    )
    if force:
        return Question(
            f"pid {process.pid} is still running {wait_s:.0f} s after SIGTERM. Send SIGKILL?",
            facts,
            "SIGKILL ends it at once: it cannot clean up or save anything.",
        )
    return Question(
        f"Send SIGTERM to pid {process.pid}?",
        facts,
        f"SIGTERM asks it to end. If it is still there after {wait_s:.0f} s, SIGKILL is offered.",
    )


async def signal_and_wait(stopper: Stopper, process: Target, force: bool, wait_s: float = WAIT_S) -> tuple[Result, str]:
    """Send the signal and wait up to `wait_s` for the process to end, off the UI's loop: what came of it and,
    when the system refused the signal, why."""
    try:
        sent = await asyncio.to_thread(stopper.send, process.first, force)
    except StopFailed as exc:
        return "failed", str(exc)
    if not sent:
        return "gone", ""
    deadline = time.monotonic() + wait_s
    while not await asyncio.to_thread(stopper.ended, process.first):
        if time.monotonic() >= deadline:
            return "running", ""
        await asyncio.sleep(POLL_S)
    return "ended", ""


@dataclass(frozen=True)
class Outcome:
    """What came of one signal: said on screen, and a line in the recording."""

    process: Target
    force: bool
    result: Result
    why: str = ""
    """The system's refusal, for `failed`."""
    wait_s: float = WAIT_S

    def said(self, unit: Unit) -> str:
        name, who = signal_name(self.force), self.process.who
        return {
            "ended": f"{who} ended after {name}; it held {self.process.held(unit)}",
            "running": f"{who} is still running {self.wait_s:.0f} s after {name}",
            "gone": f"{who} was already gone: no signal sent",
            "failed": f"{who} not stopped: {self.why}",
        }[self.result]

    def event(self, at: float, unit: Unit) -> Signalled:
        return Signalled(
            event="signal",
            timestamp=at,
            pid=self.process.pid,
            signal=signal_name(self.force),
            outcome=self.result,
            said=self.said(unit),
        )

"""Stopping a process from the node screen (`k`): who may stop which process, the signal sent by os.kill, and
whether the process has ended. No Textual: the screen asks its feed's `stopper()` (a live node: `Signaller`;
a demo: the simulated node's; a recording or a node read from Prometheus: none, and why)."""

from __future__ import annotations

import os
import pwd
import signal
from abc import ABC, abstractmethod
from collections.abc import Callable

from gpumem_tui.models import ProcessRecord
from gpumem_tui.sources.procfs import ProcFiles
from gpumem_tui.text import literal

SAME_START_S = 1.0
"""Two readings of one process's start differ by rounding only (clock ticks, the boot time's whole seconds)."""


def signal_name(force: bool) -> str:
    """SIGTERM asks a process to end (it may clean up, or ignore it); SIGKILL (`force`) cannot be ignored."""
    return "SIGKILL" if force else "SIGTERM"


def user_name(uid: int) -> str:
    try:
        return literal(pwd.getpwuid(uid).pw_name)
    except KeyError:
        return f"uid {uid}"


class StopFailed(Exception):
    """The system refused the signal: why, in words."""


class Stopper(ABC):
    """What `k` asks of a source that can stop its processes."""

    def refusal(self, process: ProcessRecord) -> str | None:
        """Why this process may not be stopped from here, in words; None: it may."""
        pid = process.pid
        if process.visible is False:
            return (
                f"pid {pid} is not visible here (it runs in another PID namespace): a signal to pid {pid} from "
                "here would reach another process or none. Stop it where it runs."
            )
        return self.owner_refusal(pid)

    def owner_refusal(self, pid: int) -> str | None:  # noqa: ARG002 - a source whose processes are all ours
        """Why the owner of `pid` keeps it from us; None: nothing does (the demo acts as its node's root)."""
        return None

    @abstractmethod
    def send(self, process: ProcessRecord, force: bool) -> bool:
        """SIGTERM, or SIGKILL when `force`: True when sent, False when the process was already gone;
        StopFailed when the system refused it."""

    @abstractmethod
    def ended(self, process: ProcessRecord) -> bool:
        """Whether the process is gone (a zombie has ended: it holds no memory)."""


class Signaller(Stopper):
    """This node's processes, by os.kill. The owner is read from /proc (`proc`) and compared with our
    effective uid (`me`): another user's process is refused unless we are root."""

    def __init__(self, proc: ProcFiles | None = None, me: Callable[[], int] = os.geteuid):
        self.proc, self.me = proc or ProcFiles(), me

    def owner_refusal(self, pid: int) -> str | None:
        if pid == os.getpid():
            return f"pid {pid} is this gpumem-tui (q quits it)"
        me, owner = self.me(), self.proc.owner(pid)
        if me == 0 or owner is None or owner == me:
            return None  # an owner we cannot read: the kernel decides, and a refusal is said as it comes
        return (
            f"pid {pid} belongs to {user_name(owner)} and you are {user_name(me)}: only root may stop another "
            f"user's process from here. Ask {user_name(owner)}, or run gpumem-tui as root."
        )

    def send(self, process: ProcessRecord, force: bool) -> bool:
        pid = process.pid
        if not self._same(process):
            return False  # gone, and its pid taken by another process since: that one is not signalled
        try:
            os.kill(pid, signal.SIGKILL if force else signal.SIGTERM)
        except ProcessLookupError:
            return False
        except PermissionError as exc:
            raise StopFailed(f"the system refused {signal_name(force)} to pid {pid}: {exc.strerror}") from None
        return True

    def ended(self, process: ProcessRecord) -> bool:
        return self.proc.ended(process.pid) or not self._same(process)

    def _same(self, process: ProcessRecord) -> bool:
        """Whether its pid still names the process the screen showed: one started at the same moment (a pid
        is reused once its process is gone, and a few seconds' wait leaves time for that)."""
        if process.started is None:
            return True  # the sample could not say: the pid is all there is to go by
        now = self.proc.started(process.pid)
        return now is not None and abs(now - process.started) < SAME_START_S

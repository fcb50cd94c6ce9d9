"""The simulated node's host side: its processes are not real pids, so it describes them itself; what /proc
would say of their pods, networks and GPUs comes from `SimulatedProc`, read by the real parsers."""

from __future__ import annotations

from collections.abc import Iterable

from gpumem_tui.demo.node import SimulatedNode
from gpumem_tui.demo.proc import SimulatedProc
from gpumem_tui.models import HostRecord, ProcessInfo
from gpumem_tui.sources.host import not_visible


class SimulatedHost:
    """Same shape as the psutil host source, answering from the simulated node's process table. In a
    `view = "container"` scenario it runs inside the first engine's container: NVML's (host) pids are not
    visible here, and the command lines it sees carry the container's own pids."""

    def __init__(self, node: SimulatedNode):
        self._node = node
        self.proc = SimulatedProc(node)
        self._described: dict[int, tuple[ProcessInfo, ProcessInfo]] = {}
        """pid -> (the node's view of it, that view with its pod): the pod read once per view, as a process
        stays in its pod and the node builds a view anew only when it changes (`process_infos`)."""

    def describe(self, pids: Iterable[int]) -> dict[int, ProcessInfo]:
        if self.proc.container:
            return {pid: not_visible(pid) for pid in pids}
        known = self._node.process_infos()
        return {pid: self._with_pod(pid, known[pid]) if pid in known else not_visible(pid) for pid in pids}

    def _with_pod(self, pid: int, info: ProcessInfo) -> ProcessInfo:
        seen = self._described.get(pid)
        if seen is None or seen[0] is not info:
            seen = self._described[pid] = (info, info.model_copy(update={"pod": self.proc.pod(pid)}))
        return seen[1]

    def command_lines(self) -> list[tuple[int, list[str], int | None]]:
        infos = self._node.process_infos()
        return [(pid, infos[host_pid].cmdline or [], None) for pid, (_, _, host_pid) in self.proc.seen().items()]

    def pids_here(self, engine_id: str) -> list[int]:
        """An engine's pids as this view sees them (its container's own pids inside a container)."""
        return [pid for pid, (owner, _, _) in self.proc.seen().items() if owner == engine_id]

    def host(self) -> HostRecord:
        return self._node.host_record()

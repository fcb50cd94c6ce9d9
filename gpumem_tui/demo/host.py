"""The simulated node's host side: its processes are not real pids, so it describes them itself."""

from __future__ import annotations

from collections.abc import Iterable

from gpumem_tui.demo.node import SimulatedNode
from gpumem_tui.models import HostRecord, ProcessInfo


class SimulatedHost:
    """Same shape as the psutil host source, answering from the simulated node's process table."""

    def __init__(self, node: SimulatedNode):
        self._node = node

    def describe(self, pids: Iterable[int]) -> dict[int, ProcessInfo]:
        known = self._node.process_infos()
        return {
            pid: known.get(pid) or ProcessInfo(pid=pid, visible=False, note=f"pid {pid}, not visible here")
            for pid in pids
        }

    def command_lines(self) -> list[tuple[int, list[str], int | None]]:
        return [(pid, info.cmdline or [], None) for pid, info in self._node.process_infos().items()]

    def host(self) -> HostRecord:
        return self._node.host_record()

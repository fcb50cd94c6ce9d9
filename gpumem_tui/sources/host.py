"""Host source: the machine's RAM, swap and CPU, and pid -> name, user, cmdline, RSS, CPU (via psutil).

NVML reports host PIDs; inside a container (another PID namespace) or after the process exited they
may not exist here. Such a pid is described by what is known ("pid 4242, not visible here"), never an
exception. This is the only module importing psutil, and only where it reads: the simulated node takes
`not_visible` and the live feed `own_addresses` from here without loading it.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from gpumem_tui.models import HostRecord, ProcessInfo
from gpumem_tui.sources.procfs import ProcFiles

if TYPE_CHECKING:
    import psutil


def not_visible(pid: int) -> ProcessInfo:
    """A pid this PID namespace cannot see: exited, or belonging to another namespace."""
    return ProcessInfo(pid=pid, visible=False, note=f"pid {pid}, not visible here")


def _read(getter: Callable[[], Any]) -> Any:
    """One field; a field the OS will not show us (another user's process) is None."""
    import psutil

    try:
        return getter()
    except (psutil.AccessDenied, psutil.ZombieProcess):
        return None


def own_addresses() -> set[str]:
    """This node's own addresses (every interface's IPv4 and IPv6) and its host name: where discovery may
    probe an engine a command line names."""
    import psutil

    found = {socket.gethostname()}
    for entries in psutil.net_if_addrs().values():
        found.update(e.address for e in entries if e.family in (socket.AF_INET, socket.AF_INET6))
    return found


class HostSource:
    """Reads this machine. CPU percentages need two looks, so the first sample of a pid has CPU None.

    Name, user, command line and pod are read once per pid and kept while the pid stays on a GPU; RSS and
    CPU are read every time (this halves the cost of a refresh). Container and pod facts come from `proc`
    (the real /proc and /var/log/pods by default).
    """

    def __init__(self, proc: ProcFiles | None = None) -> None:
        self.proc = proc or ProcFiles()
        self._seen: dict[int, psutil.Process] = {}
        self._fixed: dict[int, dict[str, Any]] = {}
        self._host_cpu_primed = False

    def describe(self, pids: Iterable[int]) -> dict[int, ProcessInfo]:
        wanted = set(pids)
        self._seen = {pid: proc for pid, proc in self._seen.items() if pid in wanted}
        self._fixed = {pid: fixed for pid, fixed in self._fixed.items() if pid in wanted}
        return {pid: self._describe(pid) for pid in wanted}

    def _describe(self, pid: int) -> ProcessInfo:
        import psutil

        try:
            first_look = pid not in self._seen
            proc = self._seen.get(pid) or psutil.Process(pid)
            self._seen[pid] = proc
            with proc.oneshot():
                memory = _read(proc.memory_info)
                cpu = _read(proc.cpu_percent)
                fixed = self._fixed.get(pid) or {
                    "name": _read(proc.name),
                    "user": _read(proc.username),
                    "cmdline": _read(proc.cmdline),
                    "pod": self.proc.pod(pid),
                    "started": _read(proc.create_time),
                }
            self._fixed[pid] = fixed
            return ProcessInfo(
                pid=pid,
                **fixed,
                host_rss_bytes=None if memory is None else memory.rss,
                cpu_percent=None if first_look or cpu is None else cpu,
            )
        except (psutil.NoSuchProcess, ValueError):
            self._seen.pop(pid, None)
            self._fixed.pop(pid, None)
            return not_visible(pid)

    def command_lines(self) -> list[tuple[int, list[str], int | None]]:
        """(pid, argv, ppid) of every process this namespace can see, for engine discovery."""
        import psutil

        found = []
        for proc in psutil.process_iter(["pid", "cmdline", "ppid"]):
            info = proc.info
            if info.get("cmdline"):
                found.append((info["pid"], info["cmdline"], info.get("ppid")))
        return found

    def host(self) -> HostRecord:
        import psutil

        memory, swap = psutil.virtual_memory(), psutil.swap_memory()
        cpu = psutil.cpu_percent(interval=None)
        primed, self._host_cpu_primed = self._host_cpu_primed, True
        return HostRecord(
            memory_total_bytes=memory.total,
            memory_used_bytes=memory.total - memory.available,
            memory_available_bytes=memory.available,
            swap_total_bytes=swap.total,
            swap_used_bytes=swap.used,
            cpu_percent=cpu if primed else None,
            cpu_count=psutil.cpu_count(),
        )

"""The simulated node's /proc: the text the kernel would show of its processes' pods, network namespaces,
sockets and environments, built from the scenario and read through the real parsers (`sources.procfs`).

On the host (`view = "host"`), a process in a pod has a kubepods cgroup and, for an engine, a network
namespace of its own whose address is the loopback address its demo server listens on (127.0.0.2, ...).
Inside a container (`view = "container"`), pids are the container's own and only the first engine's
container is seen; its cgroup is the container's root, as with a cgroup namespace.
"""

from __future__ import annotations

import hashlib
import ipaddress

from gpumem_tui.demo.node import SimulatedNode
from gpumem_tui.demo.scenario import PodSpec
from gpumem_tui.sources.procfs import ProcFiles

HOST_NET = "net:[4026531840]"
TCP_HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"


def pod_address(k: int) -> str:
    """The k-th pod's address in the demo: a loopback address of its own, so its engine server is real."""
    return f"127.0.0.{2 + k}"


class SimulatedProc(ProcFiles):
    """Answers the reads of `ProcFiles` from the simulated node; every parser above them is the real one."""

    def __init__(self, node: SimulatedNode):
        super().__init__("/nonexistent/simulated-proc", "/nonexistent/simulated-pods", loopback=True)
        self.node = node
        self.container = node.scenario.view == "container"
        self.servers: dict[str, tuple[str, int]] = {}
        """Engine id -> the (address, port) its demo server listens on: what its pod's socket table shows."""

    def seen(self) -> dict[int, tuple[str, int, int]]:
        """Every pid this view can see -> (engine or process id, rank, NVML's pid), of live processes only."""
        found: dict[int, tuple[str, int, int]] = {}
        for k, engine in enumerate(self.node.engines):
            if not engine.alive or (self.container and k > 0):
                continue
            for rank, pid in enumerate(engine.pids):
                found[engine.spec.container_pid + rank if self.container else pid] = (engine.spec.id, rank, pid)
        for process in self.node.processes:
            if not process.alive:
                continue
            if not self.container:
                found[process.pid] = (process.spec.id, 0, process.pid)
            elif process.spec.container_pid is not None:
                found[process.spec.container_pid] = (process.spec.id, 0, process.pid)
        return found

    def _pod(self, owner: str) -> tuple[int, PodSpec] | None:
        """(k, pod) of an engine or process in a pod; k counts the pods of engines, which own addresses."""
        k = 0
        for engine in self.node.scenario.engines:
            if engine.pod is not None:
                if engine.id == owner:
                    return k, engine.pod
                k += 1
        spec = next((p for p in self.node.scenario.processes if p.id == owner and p.pod), None)
        return (-1, spec.pod) if spec and spec.pod else None

    def text(self, pid: int | str, name: str) -> str | None:
        if pid == "self":
            return None
        found = self.seen().get(int(pid))
        if found is None:
            return None
        owner, rank, _ = found
        pod = None if self.container else self._pod(owner)
        if name == "cgroup":
            return "0::/\n" if self.container else _cgroup(pod[1] if pod else None, owner)
        if name == "environ":
            return self._environ(owner)
        if pod is None or pod[0] < 0 or owner not in self.servers:
            return None  # the host's own network: discovery never asks
        address, port = self.servers[owner]
        if name == "net/fib_trie":
            return _fib_trie(address)
        if name == "net/tcp":
            return TCP_HEADER + _tcp_row(0, address, port)
        if name == "net/tcp6":
            return TCP_HEADER
        return None

    def link(self, pid: int | str, name: str) -> str | None:
        if name != "ns/net":
            return None
        if pid == "self":
            return HOST_NET
        found = self.seen().get(int(pid))
        if found is None:
            return None
        pod = None if self.container else self._pod(found[0])
        return f"net:[40265326{pod[0]:02d}]" if pod and pod[0] >= 0 else HOST_NET

    def log_dirs(self) -> list[str]:
        if self.container:
            return []
        pods = [e.pod for e in self.node.scenario.engines] + [p.pod for p in self.node.scenario.processes]
        return [f"{pod.namespace}_{pod.name}_{pod.uid}" for pod in pods if pod is not None]

    def _environ(self, owner: str) -> str:
        """An engine's GPUs as the container runtime and its launcher name them: the container's cards by
        UUID, and inside a container with several, CUDA_VISIBLE_DEVICES picking the engine's own."""
        gpus = self.node.gpus
        engine = next((e for e in self.node.engines if e.spec.id == owner), None)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOSTNAME": self.node.hostname}
        if engine is None:
            env |= next((p.environ for p in self.node.scenario.processes if p.id == owner), {})
        elif self.container:
            env["NVIDIA_VISIBLE_DEVICES"] = ",".join(gpu.uuid for gpu in gpus)
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(gpu.index) for gpu in engine.gpus)
        else:
            env["NVIDIA_VISIBLE_DEVICES"] = ",".join(gpu.uuid for gpu in engine.gpus)
        return "".join(f"{key}={value}\0" for key, value in env.items())


def _cgroup(pod: PodSpec | None, owner: str) -> str:
    """A host's cgroup v2 path (systemd driver, containerd): a pod's container, else a login session. (Inside
    a container, a cgroup namespace shows its root, `0::/`.)"""
    if pod is None:
        return "0::/user.slice/user-1000.slice/session-3.scope\n"
    slice_ = f"kubepods-burstable-pod{pod.uid.replace('-', '_')}.slice"
    container = hashlib.sha256(f"{pod.uid}/{owner}".encode()).hexdigest()
    return f"0::/kubepods.slice/kubepods-burstable.slice/{slice_}/cri-containerd-{container}.scope\n"


def _fib_trie(address: str) -> str:
    """The fib_trie of a pod's network namespace whose only interface besides loopback has `address`."""
    block = f"""  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- {address}
           /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
"""
    return f"Main:\n{block}Local:\n{block}"


def _tcp_row(slot: int, address: str, port: int) -> str:
    """A listening row of net/tcp: the IPv4 address in the kernel's little-endian hex."""
    raw = ipaddress.IPv4Address(address).packed[::-1].hex().upper()
    return (
        f"   {slot}: {raw}:{port:04X} 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
        f"{52000 + port} 1 0000000000000000 100 0 0 10 0\n"
    )

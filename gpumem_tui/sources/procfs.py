"""Containers and pods as /proc shows them: small pure parsers over a file's text, and a reader of a proc root.

Every parser takes the text of one file (`/proc/PID/cgroup`, `net/tcp`, `net/fib_trie`, `environ`) and
returns what it found, or None when the text says nothing. `ProcFiles` reads those files
under a proc root (`/proc` by default; a test's tmp_path tree, or text the simulated host builds): a file
that is absent or unreadable (not root, the pid exited) is None, never an exception.
"""

from __future__ import annotations

import ipaddress
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

POD_LOGS = Path("/var/log/pods")
"""Where the kubelet keeps one directory per pod, named `<namespace>_<name>_<uid>`."""
SERVICE_ACCOUNT = "var/run/secrets/kubernetes.io/serviceaccount/namespace"
"""The pod's namespace, as the kubelet mounts it in every container (under the process's own root)."""
MAX_READ_BYTES = 2**20
"""A /proc file is a few KiB; a socket table of a busy pod a few hundred."""
MAX_INSIDE_BYTES = 2**12
"""A container's hostname or namespace file: a name of at most 253 characters."""
MAX_DEVICES = 128
"""Selectors read from one device list: more than a node's GPUs and MIG devices (8 cards of 7 slices is 56)."""
MAX_SYMLINKS = 40
"""As the kernel's own limit on symlinks followed in one path walk."""
LISTEN = "0A"
"""The state column of a listening socket in `net/tcp` and `net/tcp6`."""

_UID = r"[0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12}|[0-9a-fA-F]{32}"
"""A pod UID: a UUID (dashes, or underscores in a systemd slice), or a static pod's manifest hash (32 hex digits)."""
_POD = re.compile(rf"kubepods.*?pod({_UID})(?![0-9a-fA-F])")
_K8S_NAME = re.compile(r"[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?")
"""A Kubernetes namespace or pod name (DNS-1123): what the container's own files may name, nothing else."""


@dataclass(frozen=True)
class Listening:
    """A socket in the LISTEN state: its address (`0.0.0.0`, `::`, `10.244.1.7`) and port."""

    address: str
    port: int


@dataclass(frozen=True)
class Whereabouts:
    """Where a process lives, as far as /proc tells: what engine discovery needs to reach and place it."""

    pod: str | None = None
    """`namespace/name` of its pod, or None outside one."""
    other_network: bool | None = None
    """True: its network namespace is not ours; None: that cannot be read (not root)."""
    addresses: tuple[str, ...] = ()
    """Its network namespace's own addresses (not loopback), when it is another namespace."""
    listening: tuple[Listening, ...] | None = None
    """Listening sockets of its network namespace; None when unreadable."""
    devices: tuple[str, ...] | None = None
    """The GPUs its environment gives it (UUIDs or indices); None: all, or not said, or unreadable."""


def pod_uid(cgroup: str | None) -> str | None:
    """The pod UID a process's cgroup names (`kubepods...pod<uid>...`), with dashes; None outside a pod.

    cgroup v2 with systemd writes the UID with underscores (`kubepods-burstable-pod1a2b_....slice`), cgroup v1
    with dashes (`/kubepods/besteffort/pod1a2b-.../<container>`); docker, containerd and CRI-O alike."""
    if not cgroup:
        return None
    for line in cgroup.splitlines():
        found = _POD.search(line)
        if found:
            return found.group(1).replace("_", "-").lower()
    return None


def pod_from_log_dirs(names: Iterable[str], uid: str) -> str | None:
    """`namespace/name` from the kubelet's `/var/log/pods/<namespace>_<name>_<uid>` directory of this pod.
    Kubernetes names hold no `_`, so the three parts split cleanly."""
    for name in names:
        parts = name.split("_")
        if len(parts) == 3 and parts[2].lower() == uid and parts[0] and parts[1]:
            return f"{parts[0]}/{parts[1]}"
    return None


def listening(table: str | None) -> list[Listening]:
    """Listening sockets of one `net/tcp` or `net/tcp6` table (hex address:port, state 0A), in table order."""
    found: list[Listening] = []
    for line in (table or "").splitlines()[1:]:
        fields = line.split()
        if len(fields) < 4 or fields[3] != LISTEN or ":" not in fields[1]:
            continue
        address, _, port = fields[1].partition(":")
        try:
            found.append(Listening(_hex_address(address), int(port, 16)))
        except ValueError:
            continue  # a line this parser does not understand says nothing
    return found


def _hex_address(text: str) -> str:
    """The kernel's hex address: 8 digits (IPv4, little-endian) or 32 (IPv6, four little-endian words)."""
    raw = bytes.fromhex(text)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    if len(raw) == 16:
        return str(ipaddress.IPv6Address(b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))))
    raise ValueError(f"not an address: {text}")


def local_addresses(fib_trie: str | None, loopback: bool = False) -> list[str]:
    """The namespace's own IPv4 addresses: the `/32 host LOCAL` entries of `net/fib_trie`, in order.

    Loopback (127/8) and link-local (169.254/16) addresses are left out: probed from our namespace they are
    our own loopback or our link's neighbours (a cloud's metadata service), never the other namespace's, and
    a pod may give itself any of them. `loopback=True` keeps 127/8 other than 127.0.0.1, where the demo's and
    the tests' pods live."""
    found: list[str] = []
    last = None
    for line in (fib_trie or "").splitlines():
        text = line.strip()
        if text.startswith("|--"):
            last = text[3:].strip()
        elif last and text.startswith("/32 host LOCAL") and last not in found:
            try:
                address = ipaddress.IPv4Address(last)
            except ValueError:
                continue
            if address.is_link_local or (address.is_loopback and (not loopback or last == "127.0.0.1")):
                continue
            found.append(last)
    return found


def environment(environ: str | None) -> dict[str, str]:
    """`/proc/PID/environ`: NUL-separated `NAME=value` entries; an entry without `=` is skipped."""
    found = {}
    for entry in (environ or "").split("\0"):
        name, sep, value = entry.partition("=")
        if sep and name:
            found[name] = value
    return found


def real_uid(status: str | None) -> int | None:
    """The owner of a process: the real uid on the `Uid:` line of `/proc/PID/status`; None when not said."""
    for line in (status or "").splitlines():
        name, _, values = line.partition(":")
        if name == "Uid" and values.split() and values.split()[0].isdigit():
            return int(values.split()[0])
    return None


def stat_ended(stat: str | None) -> bool:
    """Whether `/proc/PID/stat` says the process has ended: absent (reaped), or a zombie (`Z`) or dead (`X`)
    whose parent has not reaped it yet; either way it holds no memory. The state follows the last `)`, as the
    name before it may hold any character."""
    if not stat or ")" not in stat:
        return True
    state = stat.rpartition(")")[2].split()
    return not state or state[0] in ("Z", "X", "x")


def stat_start_ticks(stat: str | None) -> int | None:
    """When the process started, in clock ticks after boot: `/proc/PID/stat`'s field 22 (the 20th after the
    name's last `)`)."""
    fields = (stat or "").rpartition(")")[2].split()
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None


def boot_time(stat: str | None) -> float | None:
    """When the machine booted, seconds since the epoch: the `btime` line of `/proc/stat`."""
    for line in (stat or "").splitlines():
        name, _, value = line.partition(" ")
        if name == "btime" and value.strip().isdigit():
            return float(value)
    return None


def visible_devices(env: dict[str, str]) -> list[str] | None:
    """The GPUs a process was given: UUIDs (`GPU-...`, `MIG-...`) or indices as NVML numbers the cards here.
    NVIDIA_VISIBLE_DEVICES says which cards the container has; CUDA_VISIBLE_DEVICES narrows that (its indices
    count within the container's cards). None: every GPU, or the environment does not say; []: none."""
    cards = _container_cards(_device_list(env.get("NVIDIA_VISIBLE_DEVICES")))
    chosen = _cuda_devices(env.get("CUDA_VISIBLE_DEVICES"))
    if chosen is None:
        return cards
    if cards and all(item.isdigit() for item in chosen) and all(int(item) < len(cards) for item in chosen):
        return [cards[int(item)] for item in chosen]
    return chosen


def _device_list(value: str | None) -> list[str] | None:
    if value is None or value.strip() == "all":
        return None
    if value.strip() in ("none", "void", "NoDevFiles"):
        return []
    return [item.strip() for item in value.split(",", MAX_DEVICES)[:MAX_DEVICES] if item.strip()]


def _container_cards(cards: list[str] | None) -> list[str] | None:
    """NVIDIA_VISIBLE_DEVICES's indices (`2`, or `2:0` for card 2's MIG device 0) are the host's numbers;
    inside the container NVML and CUDA number its cards from 0 in the host's (PCI) order, so `2,3` is `0,1`
    there. UUIDs name the same card anywhere and stay."""
    if not cards or not all(item.partition(":")[0].isdigit() for item in cards):
        return cards
    host = sorted({int(item.partition(":")[0]) for item in cards})
    return [str(rank) for rank in range(len(host))]


def _cuda_devices(value: str | None) -> list[str] | None:
    """CUDA_VISIBLE_DEVICES as CUDA reads it: entries up to the first it cannot read (`0,-1,2` is GPU 0 only,
    `-1` or an empty value is no GPU). None: not set."""
    if value is None:
        return None
    found: list[str] = []
    for item in (part.strip() for part in value.split(",", MAX_DEVICES)[:MAX_DEVICES]):
        if not (item.isdigit() or item.startswith(("GPU-", "MIG-"))):
            break
        found.append(item)
    return found


def _components(path: str) -> list[str]:
    return [p for p in path.split("/") if p not in ("", ".")]


def _symlink(name: str, directory: int) -> str | None:
    """Where `name` in the open `directory` points; None when it is no symlink (or absent: its open says so)."""
    try:
        return os.readlink(name, dir_fd=directory)
    except OSError:
        return None


def _walk(opened: list[int], path: str) -> bool:
    """Opens each component of `path` below `opened[-1]` without following links, appending it to `opened`
    (`..` closes the last one, never the root at `opened[0]`); a symlink is resolved as the container sees it.
    False past MAX_SYMLINKS links; OSError where a component is absent or not what it must be."""
    parts = _components(path)
    links = 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            if len(opened) > 1:
                os.close(opened.pop())
            continue
        target = _symlink(part, opened[-1])
        if target is None:
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | (os.O_DIRECTORY if parts else 0)
            opened.append(os.open(part, flags, dir_fd=opened[-1]))
            continue
        links += 1
        if links > MAX_SYMLINKS:
            return False
        while target.startswith("/") and len(opened) > 1:  # absolute: from the container's root again
            os.close(opened.pop())
        parts = _components(target) + parts
    return True


def _read_text(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            return handle.read(MAX_READ_BYTES).decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return None


class ProcFiles:
    """Reads files under a proc root and a kubelet pod-log root; anything unreadable is None."""

    def __init__(self, proc: Path | str = "/proc", pod_logs: Path | str = POD_LOGS, loopback: bool = False):
        self.proc, self.pod_logs = Path(proc), Path(pod_logs)
        self.loopback = loopback
        """Take a namespace's 127/8 addresses as its own: the demo's and the tests' pods live there."""

    def text(self, pid: int | str, name: str) -> str | None:
        """`<proc>/<pid>/<name>` as text (NUL bytes kept), or None."""
        return _read_text(self.proc / str(pid) / name)

    def inside(self, pid: int | str, path: str) -> str | None:
        """A regular file at `path` in the process's own filesystem (`<proc>/<pid>/root`), or None.

        That tree is the container's to write: an absolute symlink under /proc/PID/root would resolve
        against our root (a host file), `..` could climb out of it, and a FIFO would block the open. So the
        path is walked one component at a time without following links, a symlink is resolved as the
        container sees it (absolute from its root, `..` stopping there), and only a regular file is read,
        at most MAX_INSIDE_BYTES of it."""
        try:
            root = os.open(self.proc / str(pid) / "root", os.O_RDONLY | os.O_DIRECTORY)
        except (OSError, ValueError):
            return None
        opened = [root]  # the directories walked so far, root first: `..` pops one, never the root
        try:
            if not _walk(opened, path) or len(opened) < 2 or not stat.S_ISREG(os.fstat(opened[-1]).st_mode):
                return None
            return os.read(opened[-1], MAX_INSIDE_BYTES).decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return None
        finally:
            for fd in opened:
                os.close(fd)

    def link(self, pid: int | str, name: str) -> str | None:
        """Where `<proc>/<pid>/<name>` points (`net:[4026531840]`); a plain file's text serves a test tree."""
        path = self.proc / str(pid) / name
        try:
            return os.readlink(path)
        except OSError:
            text = self.text(pid, name)
            return text.strip() if text else None

    def log_dirs(self) -> list[str]:
        try:
            return [entry.name for entry in os.scandir(self.pod_logs) if entry.is_dir()]
        except OSError:
            return []

    def pod(self, pid: int) -> str | None:
        """`namespace/name` of the pod the process runs in, `pod <uid>` when its names cannot be read, or
        None when its cgroup names no pod (or cannot be read)."""
        uid = pod_uid(self.text(pid, "cgroup"))
        if uid is None:
            return None
        named = pod_from_log_dirs(self.log_dirs(), uid)
        if named:
            return named
        # Files inside the container are its own to write (a symlink there may even point at one of ours):
        # only a Kubernetes name is taken from them.
        namespace = (self.inside(pid, SERVICE_ACCOUNT) or "").strip()
        hostname = (self.inside(pid, "etc/hostname") or "").strip()
        if _K8S_NAME.fullmatch(namespace) and _K8S_NAME.fullmatch(hostname):
            return f"{namespace}/{hostname}"
        return f"pod {uid}"

    def other_network(self, pid: int) -> bool | None:
        """True when the process's network namespace is not ours; None when that cannot be read.

        The `ns/net` links tell (root may read another user's); else the namespaces' routing tables
        (`net/fib_trie`, which anyone may read) differing tells, as two namespaces never hold the same
        addresses in practice."""
        theirs, ours = self.link(pid, "ns/net"), self.link("self", "ns/net")
        if theirs is not None and ours is not None:
            return theirs != ours
        their_routes, our_routes = self.text(pid, "net/fib_trie"), self.text("self", "net/fib_trie")
        if not their_routes or not our_routes:
            return None
        return their_routes != our_routes

    def listening(self, pid: int) -> list[Listening] | None:
        """Listening sockets of the process's network namespace (tcp and tcp6); None when unreadable."""
        tables = [self.text(pid, "net/tcp"), self.text(pid, "net/tcp6")]
        if all(table is None for table in tables):
            return None
        return [entry for table in tables for entry in listening(table)]

    def addresses(self, pid: int) -> list[str]:
        return local_addresses(self.text(pid, "net/fib_trie"), self.loopback)

    def devices(self, pid: int | str) -> list[str] | None:
        return visible_devices(environment(self.text(pid, "environ")))

    def owner(self, pid: int) -> int | None:
        """The uid the process runs as; None when it cannot be read (gone, or hidden from us)."""
        return real_uid(self.text(pid, "status"))

    def ended(self, pid: int) -> bool:
        return stat_ended(self.text(pid, "stat"))

    def started(self, pid: int) -> float | None:
        """When the process started, seconds since the epoch, as the host source (psutil) reckons it: its start
        in clock ticks after boot, plus the boot time. None when unreadable."""
        ticks, boot = stat_start_ticks(self.text(pid, "stat")), boot_time(_read_text(self.proc / "stat"))
        return None if ticks is None or boot is None else boot + ticks / os.sysconf("SC_CLK_TCK")

    def whereabouts(self, pid: int) -> Whereabouts:
        """What discovery asks of an engine process; sockets and addresses only when its network is not ours."""
        other = self.other_network(pid)
        found = self.listening(pid) if other else None
        devices = self.devices(pid)
        return Whereabouts(
            pod=self.pod(pid),
            other_network=other,
            addresses=tuple(self.addresses(pid)) if other else (),
            listening=tuple(found) if found is not None else None,
            devices=tuple(devices) if devices is not None else None,
        )

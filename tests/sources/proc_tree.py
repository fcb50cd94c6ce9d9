"""A /proc-shaped tree in a test's directory: the files the container and pod parsers read, as the kernel
writes them. The layouts are the kernel's (proc(5), Documentation/networking/proc_net_tcp.rst); the
fib_trie text is a real one read on a Linux 6.x host with a pod address put in place of its own."""

from __future__ import annotations

import ipaddress
from pathlib import Path

OUR_NET = "net:[4026531840]"
POD_NET = "net:[4026532611]"

TCP_HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"


def fib_trie(address: str) -> str:
    """A pod's fib_trie: its loopback and one eth0 address on a /24."""
    net = ".".join(address.split(".")[:3])
    block = f"""  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- {net}.0/24 2 0 2
        +-- {net}.0/28 2 0 2
           |-- {net}.0
              /24 link UNICAST
           |-- {address}
              /32 host LOCAL
        |-- {net}.255
           /32 link BROADCAST
"""
    return f"Main:\n{block}Local:\n{block}"


def tcp_line(slot: int, address: str, port: int, state: str = "0A") -> str:
    """One row of net/tcp (IPv4) or net/tcp6 (IPv6): the address in the kernel's little-endian hex."""
    raw = ipaddress.ip_address(address).packed
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    remote = "0" * len(words.hex())
    return (
        f"   {slot}: {words.hex().upper()}:{port:04X} {remote}:0000 {state} 00000000:00000000 00:00000000 "
        "00000000     0        0 41{slot:03d} 1 0000000000000000 100 0 0 10 0\n"
    )


def write(root: Path, pid: int | str, name: str, text: str) -> None:
    path = root / str(pid) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def pod_process(root: Path, pid: int, cgroup: str, address: str, listening: list[tuple[str, int]]) -> None:
    """A process in a pod's network namespace, with its cgroup, socket tables and addresses."""
    write(root, pid, "cgroup", cgroup)
    write(root, pid, "ns/net", POD_NET)
    write(root, pid, "net/fib_trie", fib_trie(address))
    v4 = [(a, p) for a, p in listening if ipaddress.ip_address(a).version == 4]
    v6 = [(a, p) for a, p in listening if ipaddress.ip_address(a).version == 6]
    write(root, pid, "net/tcp", TCP_HEADER + "".join(tcp_line(i, a, p) for i, (a, p) in enumerate(v4)))
    write(root, pid, "net/tcp6", TCP_HEADER + "".join(tcp_line(i, a, p) for i, (a, p) in enumerate(v6)))


def ourselves(root: Path) -> None:
    write(root, "self", "ns/net", OUR_NET)

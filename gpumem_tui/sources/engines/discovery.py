"""Find engine endpoints from process command lines (each engine's own test: `registry.py`) and tie them to pids.

Pure: it takes (pid, cmdline[, ppid]) tuples, so the host source supplies them and tests can too.
A child process (vLLM's EngineCore and workers hold the GPU memory) is tied to its server's
endpoint through its parent pid. An engine in another network namespace (a pod, seen from the host) is
probed at its own address, and its visible devices go with it (docs/design/node-sources.md).
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from gpumem_tui.sources.engines.endpoints import Endpoint, EndpointError, endpoint
from gpumem_tui.sources.engines.registry import started_by
from gpumem_tui.sources.procfs import Whereabouts

Look = Callable[[int], Whereabouts]
"""Where an engine process lives (its pod, network namespace, sockets, GPUs): `ProcFiles.whereabouts`."""

WILDCARD_HOSTS = {"", "0.0.0.0", "::", "[::]", "*"}
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
MAX_ENDPOINTS = 32
"""Engine servers probed at most: any local user can start processes whose command lines look like engines."""
MAX_NOTES = 3
"""Skipped processes named one by one; the rest are counted in one more line."""
_PORT = re.compile(r"[0-9]{1,5}")
_HOSTNAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


class AddressError(ValueError):
    """An engine command line whose address cannot be understood or is not on this node, in words."""


@dataclass(frozen=True)
class ProcessLine:
    """One process as discovery sees it."""

    pid: int
    argv: tuple[str, ...]
    ppid: int | None = None


@dataclass(frozen=True)
class Discovery:
    """The endpoints found, and one line per engine process that was not probed (with why)."""

    endpoints: list[Endpoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def discover(processes: Iterable[Sequence], local: Collection[str] = (), look: Look | None = None) -> list[Endpoint]:
    """Endpoints of the engine servers among these processes, each with its own and its children's pids."""
    return survey(processes, local, look).endpoints


def survey(processes: Iterable[Sequence], local: Collection[str] = (), look: Look | None = None) -> Discovery:
    """Endpoints of the engine servers among these processes, and notes on the ones skipped or reached in
    another network namespace. Each process is read on its own: one whose arguments cannot be understood is
    skipped with a note, never the rest.

    `local`: this node's own addresses and names; loopback always counts. A command line naming any other
    host is not probed: the user names such an endpoint with `--endpoint`. An engine in another network
    namespace also counts that namespace's own addresses as its node's."""
    lines: list[ProcessLine] = []
    skipped: list[str] = []
    for process in processes:
        try:
            lines.append(_line(process))
        except (TypeError, ValueError):
            skipped.append(f"a process entry that is not (pid, command line): {_short(str(process))}")
    found: dict[str, tuple[str, list[int], tuple[str, ...]]] = {}
    devices: dict[str, tuple[str, ...] | None] = {}
    reached: list[str] = []
    server_of: dict[int, str] = {}
    for line in lines:
        where = _where(look, line)
        try:
            hit = engine_address(line.argv, [*local, *where.addresses] if where.other_network else local)
        except AddressError as exc:
            skipped.append(f"pid {line.pid}: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 - one process never stops discovery of the others
            skipped.append(f"pid {line.pid}: its command line could not be read ({type(exc).__name__}): not probed")
            continue
        if hit is None:
            continue
        engine, url, notes = hit
        url, said = reach(line.pid, url, where)
        if url not in found and len(found) >= MAX_ENDPOINTS:
            skipped.append(f"pid {line.pid}: more than {MAX_ENDPOINTS} engine servers; not probed")
            continue
        if said and url not in found:
            reached.append(said)
        found.setdefault(url, (engine, [], (*notes, *([said] if said else []))))[1].append(line.pid)
        devices.setdefault(url, where.devices)
        server_of[line.pid] = url
    _tie_children(lines, found, server_of)
    endpoints = [
        endpoint(url, engine=engine, pids=tuple(sorted(pids)), notes=notes, devices=devices[url])
        for url, (engine, pids, notes) in found.items()
    ]
    return Discovery(endpoints, [*reached, *_summary(skipped)])


def _where(look: Look | None, line: ProcessLine) -> Whereabouts:
    """What /proc says of an engine process (nothing for other processes, or without a `look`); a look that
    fails says nothing, and the engine is probed as its command line says."""
    if look is None or started_by(line.argv) is None:
        return Whereabouts()
    try:
        return look(line.pid)
    except Exception:  # noqa: BLE001 - /proc is outside input: the command line still says where to probe
        return Whereabouts()


def reach(pid: int, url: str, where: Whereabouts) -> tuple[str, str | None]:
    """The URL to probe an engine at and, when that is not what its command line says or cannot be checked,
    a note saying which address was used and why. An engine in another network namespace is reached at that
    namespace's own address, on the port its socket table shows listening where we can reach it."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 0
    pod = f" (pod {where.pod})" if where.pod else ""
    if where.other_network is None:
        if where.pod is None:
            return url, None
        return url, (
            f"pid {pid} runs in pod {where.pod}, whose network namespace cannot be read: probed at {host}:{port} "
            "as its command line says (run as root to reach engines in pods)"
        )
    if not where.other_network:
        return url, None
    if not where.addresses or where.listening is None:
        return url, (
            f"pid {pid} runs in another network namespace{pod} whose addresses or sockets cannot be read: probed "
            f"at {host}:{port} as its command line says (run as root to reach engines in pods)"
        )
    address = host if host in where.addresses else where.addresses[0]
    ports = sorted({s.port for s in where.listening if s.address in WILDCARD_HOSTS or s.address in where.addresses})
    if port in ports:
        chosen, how = port, "from its socket table"
    elif len(ports) == 1:
        chosen, how = ports[0], f"from its socket table (its command line says {port})"
    else:
        chosen, how = port, "as its command line says (its socket table shows no listener reachable from here)"
    kind = "pod address" if where.pod else "own address"
    note = f"pid {pid} runs in another network namespace{pod}; probed at its {kind} {address}:{chosen} {how}"
    return f"http://{address}:{chosen}", note


def engine_address(argv: Sequence[str], local: Collection[str] = ()) -> tuple[str, str, tuple[str, ...]] | None:
    """(engine, base URL, notes) when this command line starts an engine server on this node, else None;
    AddressError when it does but its address cannot be understood or is another host's."""
    kind = started_by(argv)
    if kind is None:
        return None
    engine = kind.kind
    host = _option(argv, kind.host_flag) or ""
    port = _option(argv, "--port")
    if port is None:
        port = str(kind.default_port)
    if not port:
        raise AddressError(f"{engine} with --port but no value: not probed")
    if not _PORT.fullmatch(port) or not 0 < int(port) < 65536:
        raise AddressError(f"{engine} with --port '{_short(port)}', not a port (1 to 65535): not probed")
    host = "127.0.0.1" if host in WILDCARD_HOSTS else host
    where = _on_this_node(host, local, engine)
    url = f"http://{where}:{port}"
    try:
        endpoint(url)
    except EndpointError:
        raise AddressError(f"{engine} with --host '{_short(host)}', not an address: not probed") from None
    return engine, url, kind.launch_notes(argv)


def _on_this_node(host: str, local: Collection[str], engine: str) -> str:
    """The host as it goes in a URL when it is loopback or one of this node's own; AddressError otherwise."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        if not _HOSTNAME.fullmatch(host):
            raise AddressError(f"{engine} with --host '{_short(host)}', not an address: not probed") from None
        if host.lower() in LOOPBACK_NAMES or host.lower() in {name.lower() for name in local}:
            return host
    else:
        if address.is_loopback or str(address) in {_bare(a) for a in local}:
            return f"[{address}]" if address.version == 6 else str(address)
    raise AddressError(
        f"{engine} serves on '{_short(host)}', not an address of this node: not probed"
        " (pass --endpoint with its URL if that engine is meant)"
    )


def _bare(address: str) -> str:
    """An address as ipaddress writes it, without an IPv6 zone (`fe80::1%eth0`); names stay as they are."""
    try:
        return str(ipaddress.ip_address(address.split("%", 1)[0]))
    except ValueError:
        return address


def _short(text: str, limit: int = 40) -> str:
    """Outside text cut to a length a note can carry."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _summary(skipped: list[str]) -> list[str]:
    if len(skipped) <= MAX_NOTES + 1:
        return skipped
    return [*skipped[:MAX_NOTES], f"{len(skipped) - MAX_NOTES} more engine processes skipped"]


def _option(argv: Sequence[str], flag: str) -> str | None:
    """The value of `--flag V` or `--flag=V`; the last one wins, as with argparse; "" for a flag that ends
    the command line without its value."""
    value = None
    for i, arg in enumerate(argv):
        if arg == flag:
            value = argv[i + 1] if i + 1 < len(argv) else ""
        elif arg.startswith(flag + "="):
            value = arg[len(flag) + 1 :]
    return value


def _tie_children(lines: list[ProcessLine], found: dict, server_of: dict[int, str]) -> None:
    """Give every descendant of a server process (walking parent pids) to that server's endpoint."""
    parent = {line.pid: line.ppid for line in lines}
    for line in lines:
        if line.pid in server_of:
            continue
        seen, up = set(), line.ppid
        while up is not None and up not in seen and up not in server_of:
            seen.add(up)
            up = parent.get(up)
        if up in server_of:
            found[server_of[up]][1].append(line.pid)


def _line(process: Sequence) -> ProcessLine:
    pid, cmdline, *rest = process
    argv = tuple(str(word) for word in (_split(cmdline) if isinstance(cmdline, str) else cmdline or ()))
    return ProcessLine(int(pid), argv, int(rest[0]) if rest and rest[0] is not None else None)


def _split(cmdline: str) -> list[str]:
    """Shell-style words; a command line with unbalanced quotes falls back to plain whitespace."""
    try:
        return shlex.split(cmdline)
    except ValueError:
        return cmdline.split()

"""Find engine endpoints from process command lines (vLLM, SGLang, llama.cpp, TGI) and tie them to pids.

Pure: it takes (pid, cmdline[, ppid]) tuples, so the host source supplies them and tests can too.
A child process (vLLM's EngineCore and workers hold the GPU memory) is tied to its server's
endpoint through its parent pid.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpumem_tui.sources.engines.endpoints import Endpoint, endpoint

DEFAULT_PORTS = {"vllm": 8000, "sglang": 30000, "llamacpp": 8080, "tgi": 3000}
WILDCARD_HOSTS = {"", "0.0.0.0", "::", "[::]", "*"}


@dataclass(frozen=True)
class ProcessLine:
    """One process as discovery sees it."""

    pid: int
    argv: tuple[str, ...]
    ppid: int | None = None


def discover(processes: Iterable[Sequence]) -> list[Endpoint]:
    """Endpoints of the engine servers among these processes, each with its own and its children's pids."""
    lines = [_line(p) for p in processes]
    found: dict[str, tuple[str, list[int], tuple[str, ...]]] = {}
    server_of: dict[int, str] = {}
    for line in lines:
        hit = engine_address(line.argv)
        if hit is None:
            continue
        engine, url, notes = hit
        found.setdefault(url, (engine, [], notes))[1].append(line.pid)
        server_of[line.pid] = url
    _tie_children(lines, found, server_of)
    return [
        endpoint(url, engine=engine, pids=tuple(sorted(pids)), notes=notes)
        for url, (engine, pids, notes) in found.items()
    ]


def engine_address(argv: Sequence[str]) -> tuple[str, str, tuple[str, ...]] | None:
    """(engine, base URL, notes) when this command line starts an engine server, else None."""
    engine = _engine_of(argv)
    if engine is None:
        return None
    host = _option(argv, "--hostname" if engine == "tgi" else "--host") or ""
    port = _option(argv, "--port") or str(DEFAULT_PORTS[engine])
    if not port.isdigit():
        return None
    host = "127.0.0.1" if host in WILDCARD_HOSTS else host
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    notes: tuple[str, ...] = ()
    if engine == "llamacpp" and "--metrics" not in argv:
        notes = ("llama-server was started without --metrics, so /metrics is off",)
    return engine, f"http://{host}:{port}", notes


def _engine_of(argv: Sequence[str]) -> str | None:
    names = [os.path.basename(a) for a in argv]
    modules = {argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-m"}
    if any(n == "vllm" and i + 1 < len(argv) and argv[i + 1] == "serve" for i, n in enumerate(names)) or (
        "vllm.entrypoints.openai.api_server" in modules
    ):
        return "vllm"
    if "sglang.launch_server" in modules or ("sglang" in names[:2] and "serve" in argv[:3]):
        return "sglang"
    if any(n in ("llama-server", "llama-server.exe") for n in names[:2]) or "llama_cpp.server" in modules:
        return "llamacpp"
    if any(n == "text-generation-launcher" for n in names[:2]):
        return "tgi"
    return None


def _option(argv: Sequence[str], flag: str) -> str | None:
    """The value of `--flag V` or `--flag=V`; the last one wins, as with argparse."""
    value = None
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            value = argv[i + 1]
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
    argv = tuple(_split(cmdline) if isinstance(cmdline, str) else cmdline or ())
    return ProcessLine(int(pid), argv, int(rest[0]) if rest and rest[0] is not None else None)


def _split(cmdline: str) -> list[str]:
    """Shell-style words; a command line with unbalanced quotes falls back to plain whitespace."""
    try:
        return shlex.split(cmdline)
    except ValueError:
        return cmdline.split()

"""The inference engines this tool knows, one entry each: how to find one, parse its /metrics, read its launch
flags, and whether it can be sized. Every consumer (discovery, the metrics parser, the planner from what runs)
reads this table, and so does the fleet (`fleet`: the series it reads through Prometheus), so adding an engine
is one entry here and one normalizer module beside this one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.records import Record
from gpumem_tui.sources.engines import llamacpp, sglang, sglang_info, tgi, vllm
from gpumem_tui.sources.engines.advice import SGLANG, VLLM, Advice
from gpumem_tui.sources.engines.fleet_names import FleetNames
from gpumem_tui.sources.engines.launch_flags import launch_flags
from gpumem_tui.sources.engines.prometheus import Families

Argv = Sequence[str]


@dataclass(frozen=True)
class Engine:
    """One engine kind. `sizing` names the startup model that sizes it (`"vllm"`: `planner.vllm`), or None:
    it cannot be sized yet, and the plan made from it shows the measurement only."""

    kind: str
    """The `engine` of its records (`EngineRecord.engine`) and the key of this table."""
    label: str
    """Its name in sentences (`SGLang`)."""
    starts: Callable[[Argv], bool]
    """This command line starts its server."""
    words: tuple[str, ...]
    """Words in a process's name or first arguments that mark it as this engine's (its workers included)."""
    default_port: int
    families: tuple[str, ...]
    """The /metrics sample names its normalizer reads; a payload declaring one of them is this engine's."""
    normalize: Callable[[Families], list[EngineRecord]]
    host_flag: str = "--host"
    flags: Callable[[Argv], dict[str, str]] = launch_flags
    """The memory-deciding flags of its command line."""
    launch_notes: Callable[[Argv], tuple[str, ...]] = lambda _argv: ()
    """What its command line says about its endpoint (llama-server without --metrics serves none)."""
    sizing: str | None = None
    fleet: FleetNames | None = None
    """Its series the fleet reads through Prometheus (None: the fleet does not read this engine)."""
    advice: Advice = VLLM
    """The flags findings name when they advise on it (an engine without its own: vLLM's, as before)."""
    info: tuple[str, ...] = ()
    """Paths beside /metrics where it states its own settings, asked once per endpoint (SGLang's server info)."""
    read_info: Callable[[Mapping[str, str | None]], Record] | None = None
    """Those answers (path -> text, None where it gave none) -> its settings record."""
    with_info: Callable[[list[EngineRecord], Any], list[EngineRecord]] | None = None
    """Its records carrying that settings record (`EngineRecord.sglang`)."""


ENGINES: dict[str, Engine] = {}


def register(engine: Engine) -> Engine:
    """Add an engine kind (a later entry of the same kind replaces the earlier one). Kinds are tried in the
    order they were registered, so a more specific command line comes first."""
    ENGINES[engine.kind] = engine
    return engine


def unregister(kind: str) -> None:
    """Remove an engine kind (a test's own engine, when the test ends)."""
    ENGINES.pop(kind, None)


def registered(kind: str | None) -> Engine | None:
    """The entry of this kind, or None for a kind this tool does not know (a recording from a newer one)."""
    return ENGINES.get(kind) if kind else None


def started_by(argv: Argv) -> Engine | None:
    """The engine whose server this command line starts, or None."""
    return next((e for e in ENGINES.values() if e.starts(argv)), None)


def all_families() -> frozenset[str]:
    """Every /metrics sample name some engine's normalizer reads."""
    return frozenset(name for e in ENGINES.values() for name in e.families)


def advice(kind: str | None) -> Advice:
    """The flags to name when advising on an engine of this kind (vLLM's where the kind is not known)."""
    entry = registered(kind)
    return entry.advice if entry else VLLM


def fleet_engines() -> tuple[Engine, ...]:
    """The engines the fleet reads through Prometheus, in the order they were registered."""
    return tuple(e for e in ENGINES.values() if e.fleet is not None)


def looks_like_engine(name: str | None, argv: Argv | None) -> bool:
    """A process whose name or first arguments name an inference engine (`VLLM::EngineCore`, `vllm serve`)."""
    text = " ".join([name or "", *(argv or [])[:4]]).lower()
    return any(word in text for e in ENGINES.values() for word in e.words)


def _names(argv: Argv) -> list[str]:
    return [os.path.basename(a) for a in argv]


def _modules(argv: Argv) -> set[str]:
    """What `python -m MODULE` runs."""
    return {argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-m"}


def _vllm(argv: Argv) -> bool:
    names = _names(argv)
    serves = any(n == "vllm" and i + 1 < len(argv) and argv[i + 1] == "serve" for i, n in enumerate(names))
    return serves or "vllm.entrypoints.openai.api_server" in _modules(argv)


def _sglang(argv: Argv) -> bool:
    return "sglang.launch_server" in _modules(argv) or ("sglang" in _names(argv)[:2] and "serve" in argv[:3])


def _llamacpp(argv: Argv) -> bool:
    names = _names(argv)[:2]
    return any(n in ("llama-server", "llama-server.exe") for n in names) or "llama_cpp.server" in _modules(argv)


def _llamacpp_notes(argv: Argv) -> tuple[str, ...]:
    if "--metrics" in argv:
        return ()
    return ("llama-server was started without --metrics, so /metrics is off",)


def _tgi(argv: Argv) -> bool:
    return any(n == "text-generation-launcher" for n in _names(argv)[:2])


register(Engine("vllm", "vLLM", _vllm, ("vllm",), 8000, vllm.FAMILIES, vllm.normalize, sizing="vllm", fleet=vllm.FLEET))
register(
    Engine(
        "sglang",
        "SGLang",
        _sglang,
        ("sglang",),
        30000,
        sglang.FAMILIES,
        sglang.normalize,
        sizing="sglang",
        fleet=sglang.FLEET,
        advice=SGLANG,
        info=sglang_info.PATHS,
        read_info=sglang_info.read_info,
        with_info=sglang_info.with_info,
    )
)
register(
    Engine(
        "llamacpp",
        "llama.cpp",
        _llamacpp,
        ("llama-server",),
        8080,
        llamacpp.FAMILIES,
        llamacpp.normalize,
        launch_notes=_llamacpp_notes,
    )
)
register(Engine("tgi", "TGI", _tgi, ("text-generation",), 3000, tgi.FAMILIES, tgi.normalize, host_flag="--hostname"))

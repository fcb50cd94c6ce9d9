"""How a name finds its catalog entry: the one resolver that plan, fit, log, the node's plans from what runs
and the fleet's plans all go through. A model name is read as its entry's id or one of its names, then by its
last part (a path, another organisation's copy), then as a quantized copy of an entry (`-FP8`, `-AWQ`); a name
that none of these finds fails with the nearest names the catalog holds (difflib)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import NamedTuple

from gpumem_tui.catalog.schema import ModelSpec

# Suffixes that published quantized copies add to the model's name, and the method each names.
QUANT_SUFFIXES = [
    (r"[-.]fp8[-_]dynamic$", "fp8"),
    (r"[-.]fp8$", "fp8"),
    (r"[-.]quantized\.w8a8$", "w8a8"),
    (r"[-.]quantized\.w4a16$", "w4a16"),
    (r"[-.]awq(-int4)?$", "awq"),
    (r"[-.]gptq(-int4)?$", "gptq"),
]
NEAREST = 3


class LookupFailed(KeyError):
    """A name the catalog does not hold; carries the closest names it does hold."""

    def __init__(self, kind: str, name: str, suggestions: list[str]):
        super().__init__(name)
        self.kind, self.name, self.suggestions = kind, name, suggestions

    def __str__(self) -> str:
        return f"unknown {self.kind} {self.name!r}{closest(self.suggestions)}"


def closest(names: list[str]) -> str:
    """`; closest: A, B` after a name that was not found, or nothing when none is near."""
    return f"; closest: {', '.join(names)}" if names else ""


class ModelMatch(NamedTuple):
    """The entry a model name found, and how. `spec` is the entry, or for a quantized copy the entry as that
    copy ships (the copy's name as its id, the method as its checkpoint format)."""

    spec: ModelSpec
    entry: str
    """The catalog entry's id."""
    note: str | None = None
    """How the name was read, where it is not the entry's id or one of its short names; None where it is."""
    quantization: str | None = None
    """The method a quantized copy's name implies."""
    exact: bool = True
    """The name is one the entry lists (its id, a short name, a repository alias); False where it was read
    by its last part or as a quantized copy."""


class NameIndex:
    """Every name of every entry, lower-cased, to the entry's key: ids and aliases first, then the same
    without their organisation (`Llama-3.1-8B` for `meta-llama/Llama-3.1-8B`). The first entry to claim a
    name keeps it."""

    def __init__(self, entries: Mapping[str, object]):
        self.keys: dict[str, str] = {}
        self.repos: set[str] = set()
        """Names that are another repository of an entry's architecture (`ModelSpec.repo_aliases`)."""
        for short in (False, True):
            for key, entry in entries.items():
                own = [key, *getattr(entry, "aliases", [])]
                repos = [alias.id for alias in getattr(entry, "repo_aliases", [])]
                for name, repo in [*((n, False) for n in own), *((n, True) for n in repos)]:
                    self._add(name.split("/", 1)[1] if short and "/" in name else name, key, repo)

    def _add(self, name: str, key: str, repo: bool) -> None:
        lowered = name.lower()
        if lowered not in self.keys:
            self.keys[lowered] = key
            if repo:
                self.repos.add(lowered)

    def get(self, name: str) -> str | None:
        return self.keys.get(name.strip().lower())

    def nearest(self, name: str) -> list[str]:
        """The keys of the entries whose names are closest to `name` or to its last part, closest first."""
        wanted = name.strip().lower()
        probes = {wanted, _last_part(wanted)}
        scored: dict[str, float] = {}
        for probe in probes:
            for hit in difflib.get_close_matches(probe, list(self.keys), n=12, cutoff=0.5):
                score = difflib.SequenceMatcher(None, probe, hit).ratio()
                key = self.keys[hit]
                scored[key] = max(score, scored.get(key, 0.0))
        return sorted(scored, key=lambda k: -scored[k])[:NEAREST]


def resolve_model(models: Mapping[str, ModelSpec], index: NameIndex, name: str) -> ModelMatch:
    """The entry `name` finds, by the steps the module's docstring lists; LookupFailed with the nearest."""
    wanted = name.strip()
    key = index.get(wanted)
    if key is not None:
        spec = models[key]
        same = f"{wanted}: the architecture of {spec.id} (the same config.json dimensions)"
        return ModelMatch(spec, spec.id, same if wanted.lower() in index.repos else None)
    last = _last_part(wanted)
    for base, method in _readings(last):
        key = index.get(base)
        if key is not None:
            return _read_as(models[key], wanted, base, method)
    raise LookupFailed("model", name, index.nearest(wanted))


def _read_as(spec: ModelSpec, wanted: str, base: str, method: str | None) -> ModelMatch:
    if method is None:
        how = f"{wanted}: the architecture of {spec.id}, by the name's last part {base} (matched as text)"
        return ModelMatch(spec, spec.id, how, exact=False)
    copy = spec.model_copy(update={"id": wanted, "checkpoint_format": method})
    how = f"{wanted}: {spec.id} quantized as {method}, as its name says"
    return ModelMatch(copy, spec.id, how, method, exact=False)


def _readings(last: str) -> list[tuple[str, str | None]]:
    """The name's last part as written, then without the suffix a quantized copy adds (with its method)."""
    for pattern, method in QUANT_SUFFIXES:
        base = re.sub(pattern, "", last, flags=re.IGNORECASE)
        if base != last:
            return [(last, None), (base, method)]
    return [(last, None)]


def _last_part(name: str) -> str:
    return name.rstrip("/").rsplit("/", 1)[-1]

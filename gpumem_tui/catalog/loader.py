"""Read the catalog's TOML files (packaged plus the user's), validate each entry, index names and aliases."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from gpumem_tui.catalog import cache
from gpumem_tui.catalog.names import LookupFailed, ModelMatch, NameIndex, resolve_model
from gpumem_tui.catalog.schema import FormatSpec, GpuSpec, ModelSpec
from gpumem_tui.package_data import packaged_dir

ENV_VAR = "GPUMEM_TUI_CATALOG"
_KINDS: dict[str, tuple[type[BaseModel], str]] = {
    "models": (ModelSpec, "id"),
    "gpus": (GpuSpec, "key"),
    "formats": (FormatSpec, "name"),
}
Entry = TypeVar("Entry", ModelSpec, GpuSpec, FormatSpec)


class CatalogError(ValueError):
    """A catalog file or entry that cannot be used, with the file, the key and the reason."""


def user_dirs(extra: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
    """Directories from `--catalog` and from $GPUMEM_TUI_CATALOG (os.pathsep-separated)."""
    from_env = [p for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p]
    return [Path(p) for p in [*from_env, *extra]]


class Catalog:
    """Models, GPUs and formats by name; later directories override earlier ones entry by entry."""

    def __init__(self, models: dict[str, ModelSpec], gpus: dict[str, GpuSpec], formats: dict[str, FormatSpec]):
        self.models, self.gpus, self.formats = models, gpus, formats
        self._index = {kind: NameIndex(getattr(self, kind)) for kind in _KINDS}

    def model(self, name: str) -> ModelSpec:
        """The model a name finds (`match_model`): the entry, or a quantized copy of it."""
        return self.match_model(name).spec

    def match_model(self, name: str) -> ModelMatch:
        """The model a name finds and how (names.py: by id or alias, by its last part, as a quantized copy);
        LookupFailed with the nearest names."""
        return resolve_model(self.models, self._index["models"], name)

    def nearest_models(self, name: str) -> list[str]:
        """The ids of the models whose names are closest to `name`."""
        return self._index["models"].nearest(name)

    def gpu(self, name: str) -> GpuSpec:
        return self._find("gpus", "GPU", name)  # type: ignore[return-value]

    def format(self, name: str) -> FormatSpec:
        return self._find("formats", "format", name)  # type: ignore[return-value]

    def gpu_by_nvml_name(self, nvml_name: str) -> GpuSpec | None:
        """The catalog GPU a live node's NVML name identifies (case-insensitive), if any."""
        wanted = nvml_name.strip().lower()
        for spec in self.gpus.values():
            if any(name.lower() == wanted for name in spec.nvml_names):
                return spec
        return None

    def _find(self, kind: str, label: str, name: str) -> BaseModel:
        index = self._index[kind]
        key = index.get(name)
        if key is None:
            raise LookupFailed(label, name, index.nearest(name))
        return getattr(self, kind)[key]


def load_catalog(extra_dirs: Iterable[str | os.PathLike[str]] = ()) -> Catalog:
    """The packaged catalog, then each user directory on top of it. Read once per process for the same files
    (their text is the key), and validated once for all processes (`cache.py`) until a file, the code that
    validates them or a version changes."""
    sources = _sources([packaged_dir(), *user_dirs(extra_dirs)])
    texts = [text for _, text in sources if isinstance(text, str)]
    key = cache.key(texts) if len(texts) == len(sources) else None  # a failure is said by the slow path
    if key is not None and key in _LOADED:
        return _LOADED[key]
    tables: dict[str, dict[str, BaseModel]] | None = None if key is None else cache.read(key)
    if tables is None:
        tables = _validated(sources)
        if key is not None:
            cache.write(key, tables)
    catalog = Catalog(**tables)  # type: ignore[arg-type]
    if key is not None:
        _LOADED[key] = catalog
    return catalog


_LOADED: dict[str, Catalog] = {}
"""The catalogs this process has loaded, by the key of their files' text: records and indexes are never
changed, so one is shared by all who load the same files."""
_Source = tuple[Path, "str | BaseException | None"]


def _sources(directories: list[Path]) -> list[_Source]:
    """Each catalog file in order with its text, or the error reading it; a directory that is missing ends the
    list with (it, None). Nothing is raised here: `_validated` says the first failure where it always did."""
    found: list[_Source] = []
    for directory in directories:
        if not directory.is_dir():
            return [*found, (directory, None)]
        for path in sorted(directory.glob("*.toml")):
            try:
                found.append((path, path.read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:  # ValueError: not UTF-8
                found.append((path, exc))
    return found


def _validated(sources: list[_Source]) -> dict[str, dict[str, BaseModel]]:
    tables: dict[str, dict[str, BaseModel]] = {kind: {} for kind in _KINDS}
    for path, text in sources:
        if text is None:
            raise CatalogError(f"{path}: catalog directory not found")
        for kind, entries in _read_file(path, text).items():
            tables[kind].update(entries)
    return tables


def _read_file(path: Path, text: str | BaseException) -> dict[str, dict[str, BaseModel]]:
    if isinstance(text, BaseException):  # it could not be read
        raise CatalogError(f"{path}: {parse_failure(text)}")
    import tomllib  # a catalog read from the cache is not parsed

    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise CatalogError(f"{path}: nested too deeply to be read") from None
    except (OSError, ValueError) as exc:  # ValueError: not UTF-8, not TOML, an integer too long to convert
        raise CatalogError(f"{path}: {parse_failure(exc)}") from None
    found: dict[str, dict[str, BaseModel]] = {}
    for kind, section in data.items():
        if kind not in _KINDS:
            raise CatalogError(f"{path}: unknown section [{kind}]; use models, gpus or formats")
        if not isinstance(section, dict):
            raise CatalogError(f"{path}: [{kind}] must be a table of entries")
        found[kind] = {key: _validate(path, kind, key, raw) for key, raw in section.items()}
    return found


def _validate(path: Path, kind: str, key: str, raw: object) -> BaseModel:
    cls, id_field = _KINDS[kind]
    if not isinstance(raw, dict):
        raise CatalogError(f"{path}: {kind}.{key}: must be a table")
    try:
        return cls.model_validate({id_field: key, **raw})
    except ValidationError as exc:
        raise CatalogError(f"{path}: {first_error(exc, f'{kind}.{key}')}") from None


def parse_failure(exc: BaseException) -> str:
    """Why a file could not be parsed, in one short line (Python's hint about its integer limit left out)."""
    text = " ".join(str(exc).split())
    if "integer string conversion" in text:
        return "holds an integer too long to read (over 4,300 digits)"
    return text[:200]


def first_error(exc: ValidationError, within: str = "") -> str:
    """A pydantic error's first field and reason, in plain words: `models.x.layers: Input should be ...`
    (`within` names the entry), or the entry and the reason when a check of the whole entry failed."""
    first = exc.errors()[0]
    where = ".".join(part for part in (within, *map(str, first["loc"])) if part)
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message

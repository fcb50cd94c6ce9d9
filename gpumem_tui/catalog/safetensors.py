"""Read safetensors headers (never the tensors) for the exact bytes a checkpoint holds, by dtype."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from gpumem_tui.catalog.loader import CatalogError

_MAX_HEADER = 100 * 2**20


class CheckpointBytes(BaseModel):
    """What the safetensors files beside a config hold: bytes per dtype, in total."""

    model_config = ConfigDict(frozen=True)

    files: int
    tensors: int
    bytes_by_dtype: dict[str, int]

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_by_dtype.values())


def read_header(path: Path) -> dict:
    """The JSON header of one safetensors file: an 8-byte little-endian length, then that much JSON."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(8)
            if len(raw) < 8:
                raise CatalogError(f"{path}: too short to be a safetensors file")
            (length,) = struct.unpack("<Q", raw)
            if length > _MAX_HEADER:
                raise CatalogError(f"{path}: header length {length} is not plausible for safetensors")
            return json.loads(handle.read(length))
    except (OSError, ValueError) as exc:
        raise CatalogError(f"{path}: cannot read safetensors header: {exc}") from None


def checkpoint_bytes(directory: Path) -> CheckpointBytes | None:
    """Sum tensor bytes per dtype over every `*.safetensors` file in `directory`; None when there are none."""
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        return None
    by_dtype: dict[str, int] = {}
    tensors = 0
    for path in files:
        for name, info in read_header(path).items():
            if name == "__metadata__":
                continue
            start, end = info["data_offsets"]
            by_dtype[info["dtype"]] = by_dtype.get(info["dtype"], 0) + (end - start)
            tensors += 1
    return CheckpointBytes(files=len(files), tensors=tensors, bytes_by_dtype=by_dtype)

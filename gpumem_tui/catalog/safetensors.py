"""Read safetensors headers (never the tensors) for the exact bytes a checkpoint holds, by dtype."""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path

from gpumem_tui.catalog.jsonfile import read_json
from gpumem_tui.catalog.loader import CatalogError
from gpumem_tui.records import Record

MAX_HEADER = 100_000_000
"""The safetensors format's own limit on its JSON header."""
BITS = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "I64": 64,
    "U64": 64,
    "F64": 64,
    "C64": 64,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
}
"""Bits per element of each dtype the format names."""


class CheckpointBytes(Record):
    """What the safetensors files beside a config hold: bytes per dtype, in total."""

    files: int
    tensors: int
    bytes_by_dtype: dict[str, int]

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_by_dtype.values())


def read_header(path: Path) -> tuple[dict, int]:
    """The JSON header of one safetensors file (an 8-byte little-endian length, then that much JSON) and
    the bytes of tensor data after it. A length past the file or the format's limit is refused unread."""
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            raw = handle.read(8)
            if len(raw) < 8:
                raise CatalogError(f"{path}: too short to be a safetensors file")
            (length,) = struct.unpack("<Q", raw)
            if length > MAX_HEADER or length > size - 8:
                raise CatalogError(
                    f"{path}: header length {length:,} bytes is more than the file or the "
                    f"format allows ({min(MAX_HEADER, size - 8):,}); not a safetensors file"
                )
            text = handle.read(length)
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read safetensors header: {exc.strerror or exc}") from None
    header = read_json(text, f"{path}: safetensors header")
    if not isinstance(header, dict):
        raise CatalogError(f"{path}: safetensors header is not a JSON object")
    return header, size - 8 - length


def tensor_bytes(path: Path, name: str, info: object, data_bytes: int) -> tuple[str, int]:
    """(dtype, bytes) of one header entry, checked: a known dtype, a shape of counts, offsets inside the
    data that hold exactly that shape."""
    where = f"{path}: tensor {name[:80]!r}"
    if not isinstance(info, dict):
        raise CatalogError(f"{where}: not a table of dtype, shape and data_offsets")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in BITS:  # a list or a table is no dtype (and not hashable)
        raise CatalogError(f"{where}: unknown dtype {str(dtype)[:40]!r}")
    if not isinstance(shape, list) or not all(_count(n) for n in shape):
        raise CatalogError(f"{where}: shape is not a list of counts")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_count(n) for n in offsets)):
        raise CatalogError(f"{where}: data_offsets is not two byte offsets")
    start, end = offsets
    if not start <= end <= data_bytes:
        raise CatalogError(f"{where}: data_offsets [{start}, {end}] lie outside the {data_bytes:,} data bytes")
    if math.ceil(math.prod(shape) * BITS[dtype] / 8) != end - start:
        raise CatalogError(f"{where}: shape and dtype do not match its {end - start:,} bytes")
    return dtype, end - start


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def checkpoint_bytes(directory: Path) -> CheckpointBytes | None:
    """Sum tensor bytes per dtype over every `*.safetensors` file in `directory`; None when there are none."""
    try:
        files = sorted(directory.glob("*.safetensors"))
    except OSError as exc:
        raise CatalogError(f"{directory}: cannot list safetensors files: {exc.strerror or exc}") from None
    if not files:
        return None
    by_dtype: dict[str, int] = {}
    tensors = 0
    for path in files:
        header, data_bytes = read_header(path)
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dtype, nbytes = tensor_bytes(path, name, info, data_bytes)
            by_dtype[dtype] = by_dtype.get(dtype, 0) + nbytes
            tensors += 1
    return CheckpointBytes(files=len(files), tensors=tensors, bytes_by_dtype=by_dtype)

"""JSON from a local file's bytes (config.json, a safetensors header), every way it can fail as one
CatalogError: not UTF-8, not JSON, nested too deep, an integer too long to convert."""

from __future__ import annotations

import json

from gpumem_tui.catalog.loader import CatalogError, parse_failure

MAX_DEPTH = 64
"""Nesting a model file never needs (config.json: 3 levels); deeper would break recursive code later
(copying, validating) even where the parser itself copes."""


def read_json(raw: bytes, what: str) -> object:
    """The JSON value `raw` holds; `what` names the file in the error."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise CatalogError(f"{what} is not UTF-8 text") from None
    except RecursionError:
        raise CatalogError(f"{what} is nested too deeply to be read") from None
    except ValueError as exc:
        raise CatalogError(f"{what} is not valid JSON: {parse_failure(exc)}") from None
    if _depth(value) > MAX_DEPTH:
        raise CatalogError(f"{what} is nested too deeply to be read (over {MAX_DEPTH} levels)")
    return value


def _depth(value: object) -> int:
    """How deep lists and objects nest, walked without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest

"""JSON from a local file's bytes (config.json, a safetensors header), every way it can fail as one
CatalogError: not UTF-8, not JSON, nested too deep, an integer too long to convert."""

from __future__ import annotations

import json

from gpumem_tui.catalog.loader import CatalogError


def read_json(raw: bytes, what: str) -> object:
    """The JSON value `raw` holds; `what` names the file in the error."""
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise CatalogError(f"{what} is not UTF-8 text") from None
    except RecursionError:
        raise CatalogError(f"{what} is nested too deeply to be read") from None
    except ValueError as exc:
        raise CatalogError(f"{what} is not valid JSON: {' '.join(str(exc).split())[:200]}") from None

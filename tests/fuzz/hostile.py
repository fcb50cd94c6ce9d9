"""Hostile recordings for the fuzz suite: a real sample of the simulated node with every string field of
every record (found by walking the pydantic models, so a field added later is covered too) replaced by
text that would move the cursor, retitle the terminal or style itself if it reached the screen raw."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gpumem_tui.models import Sample, SourceError
from gpumem_tui.sources.replay import FORMAT_NAME, FORMAT_VERSION

ESCAPES = ("\x1b]0;pwned\x07", "\x1b[2J", "\x9b31m", "[bold]marked[/bold]", "\r", "\x07")
HOSTILE = "".join(ESCAPES)
RAW = ("\x1b", "\x9b")


def header() -> str:
    return json.dumps({"format": FORMAT_NAME, "version": FORMAT_VERSION, "created": 0.0, "writer": "test"})


def _is_text(annotation: Any) -> bool:
    """str, str | None and list[str]: every field that holds free text (a Literal keeps its few words)."""
    if annotation is str:
        return True
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_is_text(a) for a in args if a is not type(None))
    return origin is list and args == (str,)


def poison(record: BaseModel, text: str = HOSTILE) -> BaseModel:
    """A copy of `record` with every free-text field, in every nested record, set to `text`."""
    update: dict[str, Any] = {}
    for name, field in type(record).model_fields.items():
        value = getattr(record, name)
        if isinstance(value, BaseModel):
            update[name] = poison(value, text)
        elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
            update[name] = [poison(item, text) for item in value]
        elif _is_text(field.annotation):
            is_list = typing.get_origin(field.annotation) is list or isinstance(value, list)
            update[name] = [text, text] if is_list else text
    return record.model_copy(update=update)


def hostile_sample(sample: Sample, text: str = HOSTILE) -> Sample:
    """`sample` poisoned, plus a source error for each GPU and one for the node (source, message, hint)."""
    errors = [SourceError(source="nvml", message="m", hint="h", gpu_index=g.index) for g in sample.gpus]
    errors.append(SourceError(source="engine", message="m", hint="h"))
    return poison(sample.model_copy(update={"errors": [*sample.errors, *errors]}), text)  # type: ignore[return-value]


def write_recording(path: Path, samples: list[Sample]) -> Path:
    path.write_text(header() + "\n" + "".join(s.model_dump_json() + "\n" for s in samples), encoding="utf-8")
    return path


def assert_no_raw_escape(text: str) -> None:
    for byte in RAW:
        assert byte not in text, f"a raw {byte!r} reached the output: {text[max(0, text.find(byte) - 80) :][:200]!r}"


def leaves(node, path=()):
    """Every scalar in nested dicts and lists, with its path: where a generated value can be put."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from leaves(value, (*path, i))
    else:
        yield path, node


def put(node, path, value) -> None:
    """Set the scalar at `path` (from `leaves`)."""
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value

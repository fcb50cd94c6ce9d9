"""Rule files and the manifest that carries them (a prometheus-operator `PrometheusRule`), written as YAML
from rule groups as data (dicts, lists, strings, numbers): the package has no YAML library, and rules need
only block mappings and lists. A string is written plain where YAML reads it back as that same string, else
as a JSON string (YAML reads JSON's double-quoted strings), so no expression, label or annotation is read
back as something else."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

_PLAIN = re.compile(r"[A-Za-z_](?:[A-Za-z0-9_:./-]*[A-Za-z0-9_./-])?|(?:[0-9]+(?:ms|s|m|h|d|w|y))+")
"""A name (`gpumem:node_fb_mib:sum`, `app.kubernetes.io/name`) or a Prometheus duration (`30s`, `1h30m`); never
ending in `:`, which YAML reads as a key (`- A:` is a mapping)."""
_PAIR = re.compile(r"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})")
"""JSON's escape of a character past U+FFFF (a UTF-16 surrogate pair), which YAML writes as one `\\U` escape."""
_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}
"""Plain words YAML 1.1 or 1.2 reads as a boolean or null: quoted."""


RuleGroup = dict[str, object]
"""One group as Prometheus's rule files write it: `name`, `interval`, `rules` (each a dict)."""
OPERATOR_API = "monitoring.coreos.com/v1"


def prometheus_rule(groups: Sequence[RuleGroup], name: str = "gpumem-tui", namespace: str = "gpumem-tui") -> str:
    """`groups` as a `PrometheusRule` (deploy/kubernetes/, docs/deploy.md): its `spec` is a rule file's text.
    The label `app.kubernetes.io/name` is what deploy/'s other manifests carry; a Prometheus whose
    `ruleSelector` asks for another label (kube-prometheus-stack's `release`) needs it added."""
    manifest = {
        "apiVersion": OPERATOR_API,
        "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/name": "gpumem-tui"}},
        "spec": {"groups": list(groups)},
    }
    return "# gpumem-tui's rules for the Prometheus operator (docs/deploy.md).\n" + yaml_text(manifest)


def rule_file(groups: Sequence[Mapping], comments: Sequence[str] = ()) -> str:
    """`groups` as a YAML rule file, under `comments`."""
    return yaml_text({"groups": list(groups)}, comments)


def yaml_text(data: Mapping[str, object], comments: Sequence[str] = ()) -> str:
    """`data` as a block-style YAML document, under `comments`."""
    return "".join(line + "\n" for line in [*(f"# {comment}" for comment in comments), *_mapping(data, 0)])


def _scalar(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return repr(value)
    text = str(value)
    if _PLAIN.fullmatch(text) and text.lower() not in _WORDS:
        return text
    return _PAIR.sub(_astral, json.dumps(text))


def _astral(pair: re.Match[str]) -> str:
    high, low = int(pair.group(1), 16), int(pair.group(2), 16)
    return f"\\U{0x10000 + (high - 0xD800) * 0x400 + (low - 0xDC00):08x}"


def _mapping(data: Mapping[str, object], indent: int) -> list[str]:
    pad, lines = " " * indent, []
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            lines += [f"{pad}{_scalar(key)}:", *_mapping(value, indent + 2)]
        elif isinstance(value, Sequence) and not isinstance(value, str) and value:
            lines += [f"{pad}{_scalar(key)}:", *_sequence(value, indent + 2)]
        else:
            lines.append(f"{pad}{_scalar(key)}: {_empty(value) or _scalar(value)}")
    return lines


def _sequence(items: Sequence[object], indent: int) -> list[str]:
    pad, lines = " " * indent, []
    for item in items:
        if isinstance(item, Mapping) and item:
            inner = _mapping(item, indent + 2)
        elif isinstance(item, Sequence) and not isinstance(item, str) and item:
            inner = _sequence(item, indent + 2)
        else:
            lines.append(f"{pad}- {_empty(item) or _scalar(item)}")
            continue
        lines += [f"{pad}- {inner[0].lstrip()}", *inner[1:]]
    return lines


def _empty(value: object) -> str:
    """`{}` or `[]` for an empty mapping or list (block style cannot write them); '' for anything else."""
    if isinstance(value, Mapping) and not value:
        return "{}"
    return "[]" if isinstance(value, Sequence) and not isinstance(value, str) and not value else ""

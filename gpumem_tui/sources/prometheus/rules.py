"""`gpumem-tui fleet rules`: a recording-rule group that has Prometheus compute the overview's per-node
figures once per rule interval (reference/fleet.md 4.2), so a refresh selects a few precomputed series per
node instead of aggregating every GPU's series itself. The reader uses them when the server has them all
(`Queries.rules_present`) and falls back to the raw queries otherwise; each sample says which it read.

The expressions are the raw queries' own (queries.py `Queries.recording_rules`); a `--selector` narrows
their inputs and its label names are kept in every `by (...)`, so the reader's selector still matches the
recorded series. `rule_file` writes any groups as a rule file: these, and the exporter's alerts
(export/alerts.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from gpumem_tui.sources.prometheus.queries import Queries

_NAME = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"\s*,?')


def selector_labels(matchers: str) -> tuple[str, ...]:
    """The label names of `parse_selector`'s matchers, in order, each once."""
    return tuple(dict.fromkeys(m.group(1) for m in _NAME.finditer(matchers)))


_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_:.-]*")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def recording_groups(queries: Queries, interval_s: int = 30) -> list[dict]:
    """The recording-rule group as data, as a rule file's `groups` (and a PrometheusRule's `spec.groups`)."""
    rules = queries.recording_rules(selector_labels(queries.matchers))
    return [
        {
            "name": "gpumem-fleet",
            "interval": f"{interval_s}s",
            "rules": [{"record": record, "expr": expr} for record, expr in rules.items()],
        }
    ]


def rule_group(queries: Queries, interval_s: int = 30) -> str:
    """The group as YAML for Prometheus's `rule_files`."""
    return rule_file(
        recording_groups(queries, interval_s),
        (
            "gpumem-tui fleet rules: the fleet overview's per-node figures, recorded (docs/fleet.md).",
            "Load it with rule_files in prometheus.yml; check it with `promtool check rules FILE`.",
        ),
    )


def rule_file(groups: Sequence[Mapping], comments: Sequence[str] = ()) -> str:
    """`groups` as a YAML rule file, under `comments`."""
    return yaml_text({"groups": groups}, comments)


def yaml_text(document: Mapping, comments: Sequence[str] = ()) -> str:
    """`document` as block YAML under `comments`: a word or a duration plain, any other string a JSON string
    (which YAML reads), so no expression or template needs YAML's own quoting rules."""
    lines = [f"# {comment}" for comment in comments]
    lines += _yaml(document, 0)
    return "\n".join(lines) + "\n"


def _yaml(value: object, indent: int) -> list[str]:
    """A mapping or a list as block YAML lines at `indent` spaces."""
    pad = " " * indent
    if isinstance(value, Mapping):
        lines = []
        for key, item in value.items():
            if isinstance(item, Mapping | list) and item:
                lines += [f"{pad}{key}:", *_yaml(item, indent + 2)]
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}")
        return lines
    assert isinstance(value, list)
    lines = []
    for item in value:
        if not isinstance(item, Mapping | list):
            lines.append(f"{pad}- {_scalar(item)}")
            continue
        inner = _yaml(item, indent + 2)
        lines += [f"{pad}- {inner[0].lstrip()}", *inner[1:]]
    return lines


def _scalar(value: object) -> str:
    if isinstance(value, Mapping | list):  # an empty one
        return "{}" if isinstance(value, Mapping) else "[]"
    if isinstance(value, str) and _PLAIN.fullmatch(value) and value.lower() not in _YAML_WORDS:
        number = value.replace(".", "").replace("-", "").isdigit()  # a number would be read as one
        return json.dumps(value) if number else value
    return json.dumps(value, ensure_ascii=False)

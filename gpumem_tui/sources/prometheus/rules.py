"""`gpumem-tui fleet rules`: a recording-rule group that has Prometheus compute the overview's per-node
figures once per rule interval (reference/fleet.md 4.2), so a refresh selects a few precomputed series per
node instead of aggregating every GPU's series itself. The reader uses them when the server has them all
(`Queries.rules_present`) and falls back to the raw queries otherwise; each sample says which it read.

The expressions are the raw queries' own (queries.py `Queries.recording_rules`); a `--selector` narrows
their inputs and its label names are kept in every `by (...)`, so the reader's selector still matches the
recorded series. `rule_files.rule_file` writes them as a rule file."""

from __future__ import annotations

import re

from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.rule_files import RuleGroup, rule_file

GROUP = "gpumem-fleet"
"""The rule group's name."""
_NAME = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"\s*,?')


def selector_labels(matchers: str) -> tuple[str, ...]:
    """The label names of `parse_selector`'s matchers, in order, each once."""
    return tuple(dict.fromkeys(m.group(1) for m in _NAME.finditer(matchers)))


def recording_group(queries: Queries, interval_s: int = 30) -> RuleGroup:
    """The group as data: what `rule_group` writes and deploy/kubernetes/prometheusrule.yaml carries."""
    rules = queries.recording_rules(selector_labels(queries.matchers), interval_s)
    return {
        "name": GROUP,
        "interval": f"{interval_s}s",
        "rules": [{"record": record, "expr": expr} for record, expr in rules.items()],
    }


def rule_group(queries: Queries, interval_s: int = 30) -> str:
    """The group as YAML for Prometheus's `rule_files`."""
    return rule_file(
        [recording_group(queries, interval_s)],
        (
            "gpumem-tui fleet rules: the fleet overview's per-node figures, recorded (docs/fleet.md).",
            "Load it with rule_files in prometheus.yml; check it with `promtool check rules FILE`.",
        ),
    )

"""deploy/kubernetes/prometheusrule.yaml is what `gpumem-tui fleet rules --kubernetes` prints: the groups in
GROUPS, and the YAML writer it uses reads back as the data it was given. GPUMEM_WRITE_DEPLOY=1 rewrites the file
instead of failing."""

from __future__ import annotations

import os

import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from gpumem_tui.cli import main
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.export.alerts import alert_groups
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.rule_files import prometheus_rule, rule_file, yaml_text
from gpumem_tui.sources.prometheus.rules import recording_group, rule_group
from tests.deploy.conftest import DEPLOY

RULE_FILE = DEPLOY / "kubernetes" / "prometheusrule.yaml"
SCRAPE_S = 15
"""The ServiceMonitor's scrape interval (deploy/kubernetes/servicemonitor.yaml), which the alerts' `for:` counts in."""
GROUPS = [
    recording_group(Queries(look=Thresholds().headroom_warning_fraction)),
    *alert_groups(scrape_interval_s=SCRAPE_S),
]
"""What the manifest carries: the recording rules `gpumem-tui fleet rules` prints and the alerts `fleet rules
--alerts` prints, at their default intervals."""


def test_the_rule_manifest_is_in_step_with_the_rules(capsys):
    assert main(["fleet", "rules", "--kubernetes"]) == 0
    expected = capsys.readouterr().out
    assert expected == prometheus_rule(GROUPS)
    if os.environ.get("GPUMEM_WRITE_DEPLOY") == "1":
        RULE_FILE.write_text(expected, encoding="utf-8")
    assert RULE_FILE.read_text(encoding="utf-8") == expected, (
        "GPUMEM_WRITE_DEPLOY=1 python3 -m pytest tests/deploy/test_rule_manifest.py rewrites it"
    )
    manifest = yaml.safe_load(expected)
    alerts = rule_file(alert_groups(scrape_interval_s=SCRAPE_S))
    printed = [yaml.safe_load(rule_group(Queries(look=Thresholds().headroom_warning_fraction))), yaml.safe_load(alerts)]
    assert manifest["spec"]["groups"] == [group for text in printed for group in text["groups"]]


def test_a_manifest_for_one_cluster_in_its_namespace(capsys):
    argv = ["fleet", "rules", "--kubernetes", "--namespace", "monitoring", "--selector", '{cluster="eu"}']
    assert main([*argv, "--scrape-interval", "30"]) == 0
    manifest = yaml.safe_load(capsys.readouterr().out)
    assert manifest["metadata"]["namespace"] == "monitoring"
    recording, alerts = manifest["spec"]["groups"]
    assert all('cluster="eu"' in rule["expr"] for group in (recording, alerts) for rule in group["rules"])
    assert alerts["interval"] == "30s" and {r["for"] for r in alerts["rules"]} == {"1m", "10m"}


def test_the_manifest_s_options_are_checked(capsys):
    refused = {
        ("--kubernetes", "--alerts"): "give one of --kubernetes, --alerts",
        ("--namespace", "prod"): "--namespace is the PrometheusRule's: add --kubernetes",
        ("--kubernetes", "--namespace", "Prod_1"): "--namespace 'Prod_1': a Kubernetes name",
    }
    for argv, said in refused.items():
        assert main(["fleet", "rules", *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and said in err[0], (argv, err)


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
LEAVES = (
    TEXT
    | st.integers()
    | st.booleans()
    | st.sampled_from(["30s", "1h30m", "yes", "No", "null", "1e3", "0x1f", "12:30"])
)
DATA = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=12
)


@given(st.dictionaries(TEXT, DATA, max_size=4))
@example({"": ["A:"], "B:": "C:"})  # a plain string ending in `:` reads back as a key (found by a CI run)
def test_yaml_reads_back_what_was_written(data):
    assert yaml.safe_load(yaml_text(data)) == (data or None)

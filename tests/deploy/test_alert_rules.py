"""deploy/prometheus/: the committed rule files are what `gpumem-tui fleet rules` and `fleet rules --alerts`
print, `promtool check rules` accepts them, and `promtool test rules` passes the unit tests of every alert
(fires after its `for:`, not on a blip, resolves; tests/deploy/promtool_cases.py writes them). Marked
`prometheus`: without promtool they skip with the reason, and fail in CI."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpumem_tui.cli import main
from gpumem_tui.diagnosis.findings.registry import FINDINGS
from gpumem_tui.export.alerts import alert_name
from tests.deploy.promtool_cases import test_file as unit_tests
from tests.sources.prometheus.server import require_prometheus

pytestmark = pytest.mark.prometheus

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
COMMANDS = {
    "gpumem-fleet-rules.yml": ["fleet", "rules"],
    "gpumem-alerts.yml": ["fleet", "rules", "--alerts"],
}


@pytest.mark.parametrize("name", COMMANDS)
def test_the_committed_rules_are_the_command_s(name, capsys):
    assert main(COMMANDS[name]) == 0
    printed = capsys.readouterr().out
    assert (DEPLOY / name).read_text(encoding="utf-8") == printed, f"regenerate: gpumem-tui {' '.join(COMMANDS[name])}"


def test_the_committed_unit_tests_are_the_generator_s():
    committed = (DEPLOY / "tests" / "gpumem-alerts.test.yml").read_text(encoding="utf-8")
    assert committed == unit_tests(), "regenerate: python3 -m tests.deploy.promtool_cases > deploy/prometheus/tests/..."


def test_every_code_that_warns_on_a_node_has_an_alert():
    text = (DEPLOY / "gpumem-alerts.yml").read_text(encoding="utf-8")
    for kind in FINDINGS:
        paged = "node" in kind.views and bool({"warning", "critical"} & set(kind.severities))
        for severity in ("warning", "critical", "info"):
            rule = f'code=\\"{kind.code}\\", severity=\\"{severity}\\"'
            expected = paged and severity in kind.severities and severity != "info"
            assert (rule in text) == expected, (kind.code, severity)
        assert (f"alert: {alert_name(kind.code)}\n" in text) == bool(paged), kind.code


def test_promtool_checks_the_rules():
    require_prometheus()
    files = sorted(str(path) for path in DEPLOY.glob("*.yml"))
    checked = subprocess.run(["promtool", "check", "rules", *files], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 7 rules found" in checked.stdout  # the recording rules (six figures and the change record)
    alerts = (DEPLOY / "gpumem-alerts.yml").read_text(encoding="utf-8").count("      - alert: ")
    assert f"SUCCESS: {alerts} rules found" in checked.stdout


def test_promtool_passes_every_alert_s_unit_tests():
    require_prometheus()
    files = sorted(str(path) for path in (DEPLOY / "tests").glob("*.yml"))
    tested = subprocess.run(["promtool", "test", "rules", *files], capture_output=True, text=True)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_the_options_are_checked(capsys):
    assert main(["fleet", "rules", "--scrape-interval", "5"]) == 2
    assert "--scrape-interval is for --alerts" in capsys.readouterr().err
    assert main(["fleet", "rules", "--alerts", "--scrape-interval", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--scrape-interval 0: seconds, 1 to 3600" in err[0]


def test_for_counts_in_scrape_intervals(capsys):
    assert main(["fleet", "rules", "--alerts", "--scrape-interval", "30", "--selector", '{cluster="eu"}']) == 0
    text = capsys.readouterr().out
    assert "for: 1m\n" in text and "for: 10m\n" in text and "interval: 30s\n" in text
    assert 'severity=\\"critical\\", cluster=\\"eu\\"} == 1' in text

"""`vmalert` (VictoriaMetrics' rule evaluator) loads the rule files Prometheus loads, and evaluates the
recording rules of `gpumem-tui fleet rules` into the same series: replayed over the test fleet in a
VictoriaMetrics, the fleet reads its figures from them and says what it says over Prometheus with the same rules
backfilled by promtool (conftest's `recorded_url`)."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from gpumem_tui.cli import main
from gpumem_tui.sources.prometheus.queries import Queries
from gpumem_tui.sources.prometheus.rules import rule_group
from tests.sources.prometheus.conftest import AT, END_S, fleet_text
from tests.sources.prometheus.server import T0
from tests.sources.prometheus.test_victoria_metrics import _normal
from tests.sources.prometheus.victoria import backfill, require_victoria_metrics, victoria

pytestmark = pytest.mark.prometheus

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "prometheus"


def _rule_files(folder: Path) -> list[Path]:
    """Every rule file the project ships (deploy/prometheus/*.yml), or where there is none the rules
    `gpumem-tui fleet rules` prints."""
    shipped = sorted(DEPLOY.glob("*.yml"))
    if shipped:
        return shipped
    printed = folder / "gpumem-fleet.yml"
    printed.write_text(rule_group(Queries(look=0.1), interval_s=30), encoding="utf-8")
    return [printed]


def _dry_run(rules: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["vmalert", f"-rule={rules}", "-dryRun", "-loggerLevel=ERROR"], capture_output=True, text=True, timeout=60
    )


def test_vmalert_loads_every_rule_file(tmp_path):
    require_victoria_metrics()
    for rules in _rule_files(tmp_path):
        done = _dry_run(rules)
        assert done.returncode == 0, (rules, done.stderr[-2000:])
    broken = tmp_path / "broken.yml"  # the check can fail: an expression MetricsQL cannot parse
    broken.write_text("groups:\n  - name: g\n    rules:\n      - record: a:b\n        expr: sum(\n", encoding="utf-8")
    assert _dry_run(broken).returncode != 0


def _replayed(url: str, rules: Path) -> None:
    """vmalert's replay mode: each rule evaluated over the fleet's span at the group's interval, the series
    written back to the same server."""
    start, end = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(T0 + s)) for s in (0, END_S))
    # -datasource.queryStep=0s: each step the group's interval (its default, 5 min, replays one point in 5 min)
    subprocess.run(
        [
            "vmalert", f"-rule={rules}", f"-datasource.url={url}", f"-remoteWrite.url={url}",
            f"-replay.timeFrom={start}", f"-replay.timeTo={end}", "-datasource.queryStep=0s",
            "-replay.rulesDelay=0s", "-replay.disableProgressBar", "-loggerLevel=ERROR",
        ],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    with urllib.request.urlopen(f"{url}/internal/force_flush", timeout=60):
        pass


def _snapshot(capsys, url: str) -> dict:
    main(["fleet", "snapshot", "--prometheus", url, "--at", str(AT), "--overview", "--json"])
    return json.loads(capsys.readouterr().out)


def test_vmalert_records_what_promtool_records(recorded_url, tmp_path, capsys):
    require_victoria_metrics()
    rules = tmp_path / "rules.yml"
    rules.write_text(rule_group(Queries(look=0.1), interval_s=5), encoding="utf-8")  # as conftest's recorded_blocks
    with victoria(tmp_path / "vm") as url:
        backfill(url, fleet_text())
        assert _snapshot(capsys, url)["node_figures_from"] == "raw series"
        _replayed(url, rules)
        ours = _snapshot(capsys, url)
    theirs = _snapshot(capsys, recorded_url)
    assert ours["node_figures_from"] == theirs["node_figures_from"] == "recording rules"
    assert _ageless(_normal(ours, url)) == _ageless(_normal(theirs, recorded_url))


def _ageless(snapshot: dict) -> dict:
    """A snapshot without the nodes' ages: the replay asks range queries, where VictoriaMetrics 1.79's
    `timestamp()` is each step's time, not the sample's, so the recorded ages are not the samples' (a live
    vmalert asks instant queries, which give each sample's own time: docs/fleet.md)."""
    nodes = [{k: v for k, v in n.items() if k != "data_age_s"} for n in snapshot["nodes"]]
    return {**snapshot, "nodes": nodes, "data_age_s": None, "stale_nodes": None}

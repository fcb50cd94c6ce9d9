"""docs/fleet-json.md lists exactly the keys `fleet snapshot --json` and `fleet check --json` write."""

from __future__ import annotations

import re
from pathlib import Path

from gpumem_tui.cli.fleet_cmd import SNAPSHOT_SCHEMA, check_json
from gpumem_tui.diagnosis.findings.registry import BY_CODE
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus.client import Result
from gpumem_tui.sources.prometheus.fleet import build

DOC = Path(__file__).resolve().parents[3] / "docs" / "fleet-json.md"


def _keys(heading: str) -> list[str]:
    section = DOC.read_text(encoding="utf-8").split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    section = section.split("\nCodes", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE)


def test_the_snapshot_keys_are_documented():
    sample = build("http://p", 0.0, {"gpu_memory": Result()}, {}, stale=stale)
    assert _keys("`fleet snapshot --json`") == ["schema", *sample.model_dump(mode="json")]
    assert SNAPSHOT_SCHEMA == "gpumem-tui.fleet-snapshot/1"


def test_the_codes_are_registered_finding_codes():
    text = DOC.read_text(encoding="utf-8").split("\nCodes raised from Prometheus:\n", 1)[1]
    codes = re.findall(r"^\| `([a-z_]+)` \|", text, flags=re.MULTILINE)
    assert set(codes) <= set(BY_CODE) and {"source_stale", "not_joined", "config_drift"} <= set(codes)


def test_the_check_keys_are_documented():
    sample = build("http://p", 0.0, {"gpu_memory": Result()}, {}, stale=stale)
    assert _keys("`fleet check --json`") == list(check_json(sample, [], 0))


def test_the_history_keys_and_series_are_documented():
    from gpumem_tui.sources.prometheus.history import HISTORY_SERIES, FleetHistory

    history = FleetHistory(start=0, end=60, step_s=1)
    section = DOC.read_text(encoding="utf-8").split("\n## `history` (`fleet snapshot --history SPAN --json`)\n", 1)[1]
    keys, text = section.split("\nThe series, each reduced", 1)
    assert re.findall(r"^\| `([a-z_]+)` \|", keys, flags=re.MULTILINE) == list(history.model_dump(mode="json"))
    text = text.split("\n\n", 2)[1]
    documented = [
        name
        for row in re.findall(r"^\| (`.*?) \|", text, flags=re.MULTILINE)
        for name in re.findall(r"`([a-z_]+)`", row)
    ]
    assert documented == list(HISTORY_SERIES)

"""One registry of finding codes: the `FindingCode` type, the rules `diagnose` runs and the documented codes
agree, and every finding raised carries a registered code at a severity its entry names."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import get_args

import pytest
from pydantic import ValidationError

from gpumem_tui.cli import main
from gpumem_tui.diagnosis.findings import Finding, FindingCode
from gpumem_tui.diagnosis.findings.node import refresh_failed
from gpumem_tui.diagnosis.findings.registry import BY_CODE, FINDINGS

CHECK_JSON = Path(__file__).parents[2] / "docs" / "check-json.md"
SCENARIOS = sorted(p.stem for p in (Path(__file__).parents[2] / "catalog" / "scenarios").glob("*.toml"))


def _documented_codes() -> list[str]:
    """The codes in the table under 'Codes:' in docs/check-json.md, in their order."""
    text = CHECK_JSON.read_text(encoding="utf-8")
    table = text.split("\nCodes:\n", 1)[1].lstrip("\n").split("\n\n", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", table, flags=re.MULTILINE)


def test_the_docs_list_exactly_the_registered_codes():
    documented = _documented_codes()
    assert len(documented) == len(set(documented)), "a code is documented twice"
    assert set(documented) == set(BY_CODE)


def test_the_code_type_lists_exactly_the_registered_codes_each_once():
    codes = [kind.code for kind in FINDINGS]
    assert len(codes) == len(set(codes))
    assert sorted(codes) == sorted(get_args(FindingCode))
    with pytest.raises(ValidationError):
        Finding(severity="warning", code="not_registered", title="t", explanation="e", try_this="x")


def test_every_code_is_raised_by_a_rule_or_says_where_it_is_decided():
    assert all(kind.rule or kind.decided_by for kind in FINDINGS), "a code nothing raises"


def test_a_code_made_outside_the_rules_is_registered_like_any_other():
    failed = refresh_failed("connection reset")
    assert failed.title == "refresh failed: connection reset"
    assert failed.severity in BY_CODE[failed.code].severities
    assert BY_CODE["engine_value_implausible"].rule is not None


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_finding_of_a_scenario_is_registered_at_a_named_severity(name, capsys):
    main(["check", "--demo", name, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["findings"] or name in (
        "healthy-8b",
        "idle-node",
        "tp4-70b",
        "mig-node",
        "k8s-two-pods",
        "container-view",
    )
    for finding in report["findings"]:
        assert finding["severity"] in BY_CODE[finding["code"]].severities, finding["title"]

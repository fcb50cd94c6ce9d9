"""`check`'s first line leads with what broke and where, then who: cut at 80 columns (a pager's screen,
a mail subject), it still says it in every problem scenario of the demo."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.cli import main
from tests.first_words import COLUMNS, PROBLEMS


@pytest.mark.parametrize(("scenario", "at", "words"), PROBLEMS)
def test_the_first_80_columns_of_check_say_what_broke(scenario, at, words, capsys):
    main(["check", "--demo", scenario, "--at", str(at)])
    first = capsys.readouterr().out.splitlines()[0][:COLUMNS]
    for said in words:
        assert said in first, first


@pytest.mark.parametrize("scenario", ["healthy-8b", "tp4-70b", "kv-pressure"])
def test_no_finding_says_try_nothing_beside_a_card_that_fills(scenario, capsys):
    main(["check", "--demo", scenario, "--at", "100", "--json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    filling = [f for f in findings if "full in about" in f["explanation"] or "full now" in f["explanation"]]
    assert filling, findings  # the demo's cards still grow at 100 s
    assert not [f for f in filling if f["try_this"].startswith("nothing")], filling

"""`gpumem-tui fleet [OPTIONS] ACTION [OPTIONS]`: the source options may come before the action, after it, or
both. A repeatable option given in both places keeps every value, before then after; a single-valued one
given in both places with two values is refused (one line), never "the last wins" across the action."""

from __future__ import annotations

import json
import urllib.parse

import pytest

from gpumem_tui.cli import main
from gpumem_tui.sources.prometheus.held_back import PROBE
from tests.sources.prometheus.fake import answering

EMPTY = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()


def test_headers_before_and_after_the_action_all_reach_the_server(capsys):
    seen: list = []
    with answering(200, EMPTY, seen=seen) as url:
        argv = ["fleet", "--header", "X-Scope-OrgID: team-a", "snapshot", "--prometheus", url]
        argv += ["--at", "1767225720", "--json", "--header", "X-Team: b"]
        assert main(argv) == 0
    capsys.readouterr()
    assert seen
    for _, headers, _ in seen:
        assert headers["X-Scope-OrgID"] == "team-a" and headers["X-Team"] == "b"


@pytest.mark.parametrize(
    "option, bad, good, said",
    [
        ("--catalog", "/no/such/catalog", "{tmp}", "/no/such/catalog"),
        ("--model-alias", "nothing-to-alias", "llama=meta-llama/Llama-3.1-8B", "'nothing-to-alias'"),
    ],
)
@pytest.mark.parametrize("action, code", [("snapshot", 2), ("check", 3)])
def test_a_repeatable_option_before_the_action_is_read_with_the_one_after(
    capsys, tmp_path, option, bad, good, said, action, code
):
    """A bad value before the action and a good one after it: the bad one is read, so refused."""
    good = good.format(tmp=tmp_path)  # an empty catalog directory
    assert main(["fleet", option, bad, action, "--demo", option, good, "--json"]) == code
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1 and said in captured.err


@pytest.mark.parametrize("action, code", [("snapshot", 2), ("check", 3), ("rules", 2)])
def test_a_single_value_given_twice_differently_is_refused(capsys, action, code):
    before, after = '{cluster="a"}', '{cluster="b"}'
    assert main(["fleet", "--selector", before, action, "--selector", after]) == code
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "--selector" in err[0] and before in err[0] and after in err[0]


def test_a_single_value_given_twice_alike_is_one_value(capsys):
    seen: list = []
    with answering(200, EMPTY, seen=seen) as url:
        argv = ["fleet", "--selector", '{cluster="a"}', "snapshot", "--prometheus", url, "--at", "1767225720"]
        assert main([*argv, "--json", "--selector", '{cluster="a"}']) == 0
    capsys.readouterr()
    queries = [dict(urllib.parse.parse_qsl(body.decode()))["query"] for _, _, body in seen]
    # every query of the fleet's series; the probe of how far behind the server answers reads none
    assert queries and all('cluster="a"' in q for q in queries if q != PROBE)


def test_overview_before_and_full_after_is_refused(capsys):
    """Two ways to read, one before the action and one after: refused as if given together."""
    argv = ["fleet", "--overview", "snapshot", "--prometheus", "http://127.0.0.1:1", "--full"]
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "--overview" in err[0] and "--full" in err[0]


@pytest.mark.parametrize(
    "option",
    [
        ["--prometheus", "http://127.0.0.1:1"],
        ["--demo"],
        ["--at", "1767225720"],
        ["--header", "X-Scope-OrgID: a"],
        ["--query-timeout", "3"],
        ["--full"],
        ["--node-label", "Hostname"],
        ["--model-alias", "m=meta-llama/Llama-3.1-8B"],
    ],
)
def test_a_reading_option_before_rules_is_refused_not_ignored(capsys, option):
    """`rules` prints the rule group and reads nothing: a source or a way to read given before it would go
    unused, as the screen's options would (only --selector shapes the rules)."""
    assert main(["fleet", *option, "rules"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1 and option[0] in captured.err

"""Every fleet command against a query API whose answers are spoiled (hostile_answers.py): NaN and infinities,
values of the wrong type, wrong shapes, 1 MB labels, duplicated and copied series, a 70 MB chunked answer and a
gzip bomb. Each ends with a documented exit code, in words, no traceback and no raw escape byte; a bad series
is skipped with a note, and the rest of the answer is read."""

from __future__ import annotations

import pytest

from tests.fuzz.conftest import assert_clean, run_cli
from tests.sources.prometheus.conftest import AT
from tests.sources.prometheus.hostile_answers import HOSTILE
from tests.sources.prometheus.query_api import Api, serving

COMMANDS = {
    "fleet check": (["fleet", "check"], {0, 1, 2, 3}),
    "fleet check --json": (["fleet", "check", "--json"], {0, 1, 2, 3}),
    "fleet check --full": (["fleet", "check", "--full"], {0, 1, 2, 3}),
    "fleet snapshot": (["fleet", "snapshot"], {0, 2, 3}),
    "fleet snapshot --json": (["fleet", "snapshot", "--json"], {0, 2, 3}),
    "check --node": (["check", "--node", "node-a"], {0, 1, 2, 3}),
}
REFUSED = {"70 MB chunked", "gzip bomb"}
"""Answers over the size limit: refused whole, in words."""
ONLY = {
    "70 MB chunked": {"fleet check"},
    "gzip bomb": {"fleet check"},
    "copied 1,000 times": {"fleet check", "fleet snapshot"},
}
"""The answers that cost seconds, to the reads of each kind only."""
CASES = [(h, c) for h in sorted(HOSTILE) for c in sorted(COMMANDS) if c in ONLY.get(h, COMMANDS)]


@pytest.mark.parametrize(("hostile", "command"), CASES)
def test_a_spoiled_answer_ends_in_a_documented_exit(capsys, hostile: str, command: str) -> None:
    argv, exits = COMMANDS[command]
    if hostile in REFUSED:  # each query inflates to the limit first (0.2 s of CPU): under load the deadline came first
        argv = [*argv, "--query-timeout", "120"]
    with serving(Api(**HOSTILE[hostile](), others="gpu_memory")) as url:
        code, out, err = run_cli(capsys, [*argv, "--prometheus", url])
    assert_clean(code, out, err, exits=exits, json_out="--json" in argv)
    assert "internal error" not in out + err
    if hostile in REFUSED:
        assert "byte limit" in out + err


PROXIED = sorted(set(HOSTILE) - REFUSED - {"copied 1,000 times"})
"""The spoilt answers a proxy makes of a real Prometheus's own (the refused ones hold no answer of it; the copies
cost seconds and are read above)."""


@pytest.mark.prometheus
@pytest.mark.parametrize("hostile", PROXIED)
def test_a_real_prometheus_behind_a_spoiling_proxy_ends_in_a_documented_exit(capsys, fleet_url, hostile: str) -> None:
    """The real server's answers (its labels, its NaN node, its timestamps), spoilt on the way: every command
    still ends in its documented exit, in words."""
    with serving(Api(**HOSTILE[hostile](), upstream=fleet_url)) as url:
        for command, (argv, exits) in COMMANDS.items():
            code, out, err = run_cli(capsys, [*argv, "--prometheus", url, "--at", str(AT)])
            assert_clean(code, out, err, exits=exits, json_out="--json" in argv)
            assert "internal error" not in out + err, command

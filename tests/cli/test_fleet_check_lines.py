"""`fleet check`'s text: its first line is the verdict the fleet screen shows (diagnosis/fleet/judge.verdict),
and findings that say one thing (one code, node, explanation and advice: one plan on four engines) are one line."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.cli import main
from gpumem_tui.diagnosis.findings.situation import said_of_any_engine


@pytest.fixture(scope="module")
def demo_check() -> tuple[list[str], list[dict]]:
    """`fleet check --demo`'s lines and its --json findings."""
    import contextlib
    import io

    said = []
    for extra in ([], ["--json"]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["fleet", "check", "--demo", *extra]) == 2
        said.append(out.getvalue())
    return said[0].splitlines(), json.loads(said[1])["findings"]


def test_one_line_per_distinct_finding(demo_check):
    lines, findings = demo_check
    distinct = {
        (f["severity"], f["code"], f["node"], said_of_any_engine(f["explanation"]), f["try_this"]) for f in findings
    }
    assert len(lines) - 1 == len(distinct) < len(findings)
    (notes,) = [line for line in lines if line.startswith("info     plan_note: [node-b]")]
    endpoints = [f["endpoint"] for f in findings if f["code"] == "plan_note" and f["node"] == "node-b"]
    assert len(endpoints) == 4 and all(e in notes for e in endpoints)
    assert notes.startswith("info     plan_note: [node-b] the auto plan does not fit on GPU 0,1, yet the engine runs (")


def test_each_thing_is_said_once(demo_check):
    """The node once (the `[node]` before a title that named it again), no count before the list of the
    others, `yet` as part of the sentence (not a cause after `:`), and no `Engine: engine at`."""
    lines, findings = demo_check
    text = "\n".join(lines)
    assert "[node-e] its newest dcgm-exporter sample is 90 s old" in text
    assert not any(f"[node-{c}] node node-{c}" in text for c in "abcdefghij")
    assert "[node-i] GPU 0: little free memory is left on a GPU; also GPU 1, GPU 2, GPU 3" in text
    assert ": yet the engine runs" not in text and " 4 engines: " not in text and " 4 GPUs: " not in text
    assert not any("Engine: engine at" in f["explanation"] for f in findings)
    assert any(f["explanation"].endswith("Engine: node-c:8000 on GPU 0.") for f in findings)


def test_the_first_line_names_the_worst_finding_and_counts(demo_check):
    lines, findings = demo_check
    critical = [f for f in findings if f["severity"] == "critical"]
    warnings = [f for f in findings if f["severity"] == "warning"]
    first = f"CRITICAL - [{critical[0]['node']}] {critical[0]['title']}"
    also = f"; also {len(critical) - 1} critical, {len(warnings)} warnings; "
    assert lines[0].startswith(first + also)


def test_a_finding_without_a_node_has_no_prefix():
    """An empty node name (a series whose node label is empty) was printed `[] title`."""
    from gpumem_tui.diagnosis.fleet.judge import at_node

    assert at_node("", "a title") == at_node(None, "a title") == "a title"
    assert at_node("node-e", "node node-e: 90 s old") == "[node-e] 90 s old"

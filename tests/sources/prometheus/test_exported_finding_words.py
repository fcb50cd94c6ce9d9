"""The fleet says an exported finding in the node's words (`gpumem_finding_info`), literally, and by the code's
meaning where the exporter publishes none; a finding on a GPU two engines share is one finding (canned answers
of the `node_findings` query, `build` is pure)."""

from __future__ import annotations

from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus.client import Result, Series
from gpumem_tui.sources.prometheus.fleet import build

AT = 1767225720.0
FINDING = {"Hostname": "node-x", "code": "foreign_process", "severity": "critical", "gpu": "0", "pid": "3100"}
WORDS = {
    "title": "other process on GPU 0: python3 pid 3100 holds 20.00 GiB beside the engine",
    "try_this": "ask its owner to move it to another GPU (CUDA_VISIBLE_DEVICES) or stop it",
}


def _findings(*rows: dict[str, str]) -> list:
    """The fleet's findings of a node whose exporter publishes `rows` as the node_findings query answers them."""
    results = {
        "gpu_memory": Result(),
        "exporters_age": Result([Series({"Hostname": "node-x"}, 2.0, AT)]),
        "node_findings": Result([Series(row, AT - 2, AT) for row in rows]),
    }
    return [f.finding for f in judge_fleet(build("http://p", AT, results, {}, stale=stale))]


def test_the_words_win_over_the_bare_finding_the_query_also_answers():
    (finding,) = _findings({**FINDING, **WORDS}, FINDING)
    assert (finding.title, finding.try_this) == (WORDS["title"], WORDS["try_this"])
    assert (finding.gpu_index, finding.pid, finding.endpoint) == (0, 3100, None)


def test_an_exporter_without_words_is_said_by_the_code_s_meaning():
    (finding,) = _findings(FINDING)
    assert finding.title == "node node-x GPU 0: a process that is not the engine holds memory on its GPU"
    assert finding.try_this == "run `gpumem-tui check -v` on the node, or open its TUI"


def test_a_gpu_two_engines_share_is_one_finding():
    first = {**FINDING, "model_name": "meta-llama/Llama-3.1-8B-Instruct"}
    second = {**FINDING, "model_name": "Qwen/Qwen2.5-7B"}
    (finding,) = _findings({**first, **WORDS}, {**second, **WORDS}, first, second)
    assert finding.title == WORDS["title"]


def test_the_node_s_words_are_shown_literally():
    hostile = {"title": "pid 3100 [bold]evil[/] \x1b]0;pwned\x07\nsecond line", "try_this": "stop [red]it[/red]"}
    (finding,) = _findings({**FINDING, **hostile})
    assert finding.title == "pid 3100 [bold]evil[/] \\x1b]0;pwned\\x07\\nsecond line"  # no markup, one line
    assert finding.try_this == "stop [red]it[/red]"

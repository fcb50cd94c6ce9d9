"""Selecting the wanted lines of a /metrics payload with one regex: exactly the lines the line-by-line rule
picks, on the inputs a regex gets wrong (a name that is the start of another, line ends, names inside label
values, TYPE lines, over-long lines)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpumem_tui.demo.engine_exposition import exposition
from gpumem_tui.sources.engines.parse import ALL_FAMILIES, parse_metrics
from gpumem_tui.sources.engines.prometheus import MAX_LINE, parse_families, select_lines


def by_line(text: str, wanted: set[str]) -> tuple[list[str], set[str]]:
    """The rule, one line at a time: a line is what `str.splitlines` makes one; a sample line's name ends at
    `{`, a space or a tab; a `# TYPE` line declares its second word."""
    kept, declared = [], set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            words = line.split(None, 3)
            if len(words) > 2 and words[2] in wanted:
                declared.add(words[2])
            continue
        name = line
        for stop in "{ \t":
            name = name.split(stop, 1)[0]
        if name in wanted:
            declared.add(name)
            kept.append(line)
    return kept, declared


def test_a_wanted_name_that_starts_another_name_is_not_that_name() -> None:
    text = 'a_b 1\na 2\nab{x="1"} 3\na\t4\na{y="2"} 5\n'
    assert select_lines(text, {"a"}) == (["a 2", "a\t4", 'a{y="2"} 5'], {"a"})
    assert select_lines(text, {"a", "a_b"}) == (["a_b 1", "a 2", "a\t4", 'a{y="2"} 5'], {"a", "a_b"})
    assert select_lines(text, {"a_b", "ab"}) == (["a_b 1", 'ab{x="1"} 3'], {"a_b", "ab"})


def test_a_name_ends_at_a_brace_a_space_a_tab_or_the_line_end() -> None:
    text = 'm{a="1"} 1\nm 2\nm\t3\nmx 4\nm:x 5\nm'
    assert select_lines(text, {"m"}) == (['m{a="1"} 1', "m 2", "m\t3", "m"], {"m"})


def test_crlf_and_every_other_line_boundary_end_a_line(llama) -> None:
    lf = exposition("vllm-v1", [llama]).decode()
    crlf = lf.replace("\n", "\r\n")
    assert select_lines(crlf, ALL_FAMILIES) == select_lines(lf, ALL_FAMILIES)
    assert parse_metrics(crlf) == parse_metrics(lf)
    for brk in ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"):
        assert select_lines(f"junk{brk}m 1{brk}m 2", {"m"}) == (["m 1", "m 2"], {"m"}), repr(brk)


def test_a_wanted_name_inside_a_label_value_is_not_a_line() -> None:
    escaped = 'vllm:other{model_name="x\\nvllm:num_requests_running 5"} 1\n'
    inside = 'vllm:num_requests_running{model_name="vllm:num_requests_waiting 7"} 2\n'
    kept, declared = select_lines(escaped + inside, ALL_FAMILIES)
    assert kept == [inside.rstrip("\n")] and declared == {"vllm:num_requests_running"}
    [record] = parse_metrics(escaped + inside)
    assert record.requests_running == 2 and record.requests_waiting is None


def test_type_lines_declare_wanted_names_only() -> None:
    text = (
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        "# TYPE  vllm:num_requests_running gauge\n"
        "# TYPE vllm:num_requests_waiting_x gauge\n"
        "# TYPE vllm:kv_cache_usage_perc\n"
        "#TYPE vllm:num_preemptions_total counter\n"
        "# TYPE vllm:num_requests_waiting\tgauge\n"
        "# TYPE \n"
        "vllm:cache_config_info 1\n"
    )
    declared = {"vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:num_requests_waiting"}
    assert select_lines(text, ALL_FAMILIES) == (["vllm:cache_config_info 1"], {*declared, "vllm:cache_config_info"})


def test_a_line_over_the_limit_among_wanted_lines_leaves_its_neighbours_read() -> None:
    long = 'vllm:num_requests_waiting{model_name="' + "x" * MAX_LINE + '",engine="0"} 9\n'
    text = (
        'vllm:num_requests_running{model_name="m",engine="0"} 3\n'
        + long
        + 'vllm:num_requests_waiting{model_name="m",engine="0"} 4\n'
    )
    families = parse_families(text, ALL_FAMILIES)
    assert [s.value for s in families.get("vllm:num_requests_waiting")] == [4.0]
    assert [s.value for s in families.get("vllm:num_requests_running")] == [3.0]
    assert families.notes == ["1 metrics line(s) over 16 KiB skipped (no engine writes one)"]


NAMES = ("a", "a_b", "ab", "vllm:x", "vllm:x_total", "b:c")
PIECES = (
    *NAMES,
    *("# TYPE ", "# HELP ", "#", "TYPE", "{", "}", "=", '"', "\\n", " ", "  ", "\t", "1", "x", "_", "é"),
    *("\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0", "\u2028", "\u2029", "\u3000"),
)


@settings(max_examples=400)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join), st.sets(st.sampled_from(NAMES), max_size=4))
def test_the_regex_selects_what_the_line_by_line_rule_selects(text: str, wanted: set[str]) -> None:
    assert select_lines(text, wanted) == by_line(text, wanted)


@settings(max_examples=200)
@given(st.text(max_size=300), st.sets(st.sampled_from(NAMES), max_size=4))
def test_any_text_at_all_selects_as_the_line_by_line_rule(text: str, wanted: set[str]) -> None:
    assert select_lines(text, wanted) == by_line(text, wanted)

"""Outside text made safe to show (`text.literal`): every character that is not printable becomes its visible
escape, every other stays as written, whatever the text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpumem_tui.diagnosis.findings.words import address
from gpumem_tui.text import host_port, literal, shown_url


def escaped_one_by_one(text: str) -> str:
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


@given(st.text())
def test_each_character_that_is_not_printable_is_escaped_and_no_other(text):
    assert literal(text) == escaped_one_by_one(text)


def test_control_characters_show_as_escapes_and_none_as_missing():
    assert literal("vllm\x1b[2J serve\n") == "vllm\\x1b[2J serve\\n"
    assert literal("GPU 0 \u4e2d") == "GPU 0 \u4e2d"
    assert literal(None, "?") == "?"


@pytest.mark.parametrize(
    "url, shown",
    [
        ("http://alice:hunter2@prometheus:9090/mimir", "http://prometheus:9090/mimir"),
        ("https://alice@[::1]:8000", "https://[::1]:8000"),
        ("alice:hunter2@127.0.0.1:8000", "127.0.0.1:8000"),
        ("http://alice:hun/ter?2@host", "http://host"),  # a password's '/' or '?' unencoded: cut all the same
        ("http://127.0.0.1:8000/metrics", "http://127.0.0.1:8000/metrics"),
    ],
)
def test_a_url_is_shown_without_its_user_and_password(url, shown):
    assert shown_url(url) == shown


@given(st.text(), st.text(alphabet=st.characters(blacklist_characters="@")))
def test_no_password_survives_in_a_shown_url(password, host):
    assert shown_url(f"http://user:{password}@{host}") == f"http://{host}"


@pytest.mark.parametrize(
    "url, found, short",
    [
        ("http://127.0.0.1:8003/metrics", ("127.0.0.1", 8003), ":8003"),
        ("http://node-c:8000", ("node-c", 8000), "node-c:8000"),
        ("http://[::1]:8000", ("::1", 8000), ":8000"),
        ("http://node-c", ("node-c", None), "node-c"),
        ("http://node-c:99999", None, "http://node-c:99999"),
        ("http://node-c:port", None, "http://node-c:port"),
    ],
)
def test_a_url_whose_port_does_not_parse_has_no_host_and_port(url, found, short):
    """`host_port` gives None where urlsplit raises; an engine's short address then keeps the URL as written."""
    assert host_port(url) == found
    assert address(url) == short

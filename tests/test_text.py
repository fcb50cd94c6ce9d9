"""Outside text made safe to show (`text.literal`): every character that is not printable becomes its visible
escape, every other stays as written, whatever the text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpumem_tui.text import literal


def escaped_one_by_one(text: str) -> str:
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


@given(st.text())
def test_each_character_that_is_not_printable_is_escaped_and_no_other(text):
    assert literal(text) == escaped_one_by_one(text)


def test_control_characters_show_as_escapes_and_none_as_missing():
    assert literal("vllm\x1b[2J serve\n") == "vllm\\x1b[2J serve\\n"
    assert literal("GPU 0 \u4e2d") == "GPU 0 \u4e2d"
    assert literal(None, "?") == "?"

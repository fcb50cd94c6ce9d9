"""A query API answer read as its text arrives, never whole: the envelope's small values (`status`, `warnings`,
`errorType`, `error`, `resultType`) parsed whole, the `data.result` array one item at a time, the items of each
piece of text handed on at once. Held at once: a piece, its items, and what the taker keeps of them.

Each value is parsed by the standard library's JSON scanner (C), a piece's items up to its last boundary between
two in one call. A value cut by the end of a piece is tried again once the unread text has doubled, so a long one
costs a few tries, not one per piece (docs/design/queries.md)."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Generator
from typing import Any

PIECE = 64 * 2**10
"""The most text read at a time (bytes): a piece inflated from a small compressed one may be megabytes, and the
items of one piece are all held until they are handed on."""
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # the C scanner json.loads uses
_SPACE = re.compile(r"[ \t\n\r]*")
_COMMA = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
BOUNDARY = '},{"metric":'
"""Where one item of a result ends and the next begins, as Prometheus and VictoriaMetrics write them. Never
inside a string, whose quotes are escaped (`{\\"` there)."""
Quick = Callable[[str, int, int], bool]
"""What the stream asks of a run of whole items, `text[start:end]`, before it scans them: whether the taker read
them all itself (label_memo.py); where not, they are scanned as ever."""
Walk = Generator[None, None, Any]
"""A step of the parse: it yields while it waits for more text, and returns what it read."""


class NotJson(Exception):
    """The answer is not one JSON object, or it ends before the object does."""


class AnswerStream:
    """`feed` each piece of the answer's body, then `close`; `take` gets the `data.result` items as they are
    read. After `close`: `top` holds the object's values but an object `data`, `data` that one's values but an
    array `result`, and `streamed` says whether there was such an array. NotJson where the answer is no JSON."""

    def __init__(self, take: Callable[[list[Any]], None], quick: Quick | None = None) -> None:
        self.top: dict[str, Any] = {}
        self.data: dict[str, Any] = {}
        self.streamed = False
        self._take, self._quick = take, quick
        self._text = ""
        self._pos = 0
        self._pieces: list[str] = []
        self._pending = 0
        """Characters in `_pieces`, not yet joined to `_text`."""
        self._need = 1
        """The characters `_pending` must reach before the parse goes on."""
        self._ended = False
        self._done = False
        self._batch: list[Any] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._walk = self._document()

    def feed(self, data: bytes) -> None:
        for start in range(0, len(data), PIECE):
            self._add(data[start : start + PIECE], final=False)

    def close(self) -> None:
        self._add(b"", final=True)
        if not self._done:
            raise NotJson("the answer ends before its JSON does")

    def release(self) -> None:
        """Lets go of the parse and its text, read whole or not: a parse left halfway refers to this stream,
        a cycle that would wait for the collector (paused while a fleet is read)."""
        self._walk.close()
        self._text, self._pieces, self._batch = "", [], []

    def _add(self, data: bytes, final: bool) -> None:
        try:
            text = self._decoder.decode(data, final)
        except UnicodeDecodeError:
            raise NotJson("the answer is not UTF-8") from None
        self._pieces.append(text)
        self._pending += len(text)
        self._ended = final
        if self._pending >= self._need or final:
            self._resume()

    def _resume(self) -> None:
        """The parse, on as far as the text read goes; the items it read handed on."""
        self._text = self._text[self._pos :] + "".join(self._pieces)
        self._pos, self._pieces, self._pending = 0, [], 0
        try:
            if not self._done:
                next(self._walk)
        except StopIteration:
            self._done = True
        except RecursionError:  # nested deeper than the scanner goes: no answer of the API's
            raise NotJson("the answer nests too deep") from None
        finally:
            batch, self._batch = self._batch, []
            if batch:
                self._take(batch)

    def _document(self) -> Walk:
        yield from self._object(self._in_top)
        while True:  # white space only, to the end
            self._pos = _SPACE.match(self._text, self._pos).end()  # type: ignore[union-attr]
            if self._pos < len(self._text):
                raise NotJson("text after the answer's object")
            if self._ended:
                return
            yield from self._more(double=False)

    def _in_top(self, key: str) -> Walk:
        if key == "data" and (yield from self._char()) == "{":
            yield from self._object(self._in_data)
        else:
            self.top[key] = yield from self._value()

    def _in_data(self, key: str) -> Walk:
        if key == "result" and (yield from self._char()) == "[":
            self.streamed = True
            yield from self._items()
        else:
            self.data[key] = yield from self._value()

    def _object(self, on_key: Callable[[str], Walk]) -> Walk:
        """An object, each key's value read by `on_key(key)`."""
        if (yield from self._char()) != "{":
            raise NotJson("not a JSON object")
        self._pos += 1
        if (yield from self._char()) == "}":
            self._pos += 1
            return
        while True:
            key = yield from self._value()
            if not isinstance(key, str) or (yield from self._char()) != ":":
                raise NotJson("not a JSON object")
            self._pos += 1
            yield from on_key(key)
            after = yield from self._char()
            self._pos += 1
            if after == "}":
                return
            if after != ",":
                raise NotJson("not a JSON object")

    def _items(self) -> Walk:
        """An array, each item put in the batch as it is read."""
        self._pos += 1
        if (yield from self._char()) == "]":
            self._pos += 1
            return
        while True:
            self._run()
            item = yield from self._value()  # first: the batch is handed on (and a new one begun) while it waits
            self._batch.append(item)
            after = yield from self._char()
            self._pos += 1
            if after == "]":
                return
            if after != ",":
                raise NotJson("not a JSON array")

    def _run(self) -> None:
        """Every item the text holds whole and followed by a comma, read at once (the items of a piece): those
        up to the last boundary between two items as the API writes them in one scan, the rest one by one."""
        text, pos = self._text, self._pos
        cut = text.rfind(BOUNDARY, pos)
        if cut > pos:
            if self._quick is not None and self._batch:  # the items before these handed on first: in order
                self._take(self._batch)
                self._batch = []
            if self._quick is not None and self._quick(text, pos, cut + 1):
                pos = cut + 2
            else:
                pos = _scan_to_last(text, pos, cut, self._batch)
        batch = self._batch
        try:
            while True:
                item, end = _SCAN(text, pos)
                comma = _COMMA.match(text, end)
                if comma is None:
                    break
                batch.append(item)
                pos = comma.end()
        except (StopIteration, ValueError, RecursionError):  # cut by the piece's end, or wrong: read alone
            pass
        self._pos = pos

    def _char(self) -> Walk:
        """The next character that is not white space, not taken."""
        while True:
            self._pos = _SPACE.match(self._text, self._pos).end()  # type: ignore[union-attr]
            if self._pos < len(self._text):
                return self._text[self._pos]
            yield from self._more(double=False)

    def _value(self) -> Walk:
        """One whole JSON value: a value cut by the text's end waits for more."""
        yield from self._char()
        while True:
            try:
                value, end = _SCAN(self._text, self._pos)
            except (StopIteration, ValueError):  # none starts here, or it is cut or wrong: more text tells
                end = -1
            if end >= 0 and (end < len(self._text) or self._ended):  # a number at the very end may go on
                self._pos = end
                return value
            yield from self._more(double=True)

    def _more(self, double: bool) -> Walk:
        """Waits for more text: with `double`, at least as much as is unread (a long value is tried again only
        each time its text has doubled)."""
        if self._ended:
            raise NotJson("the answer ends before its JSON does")
        self._need = max(len(self._text) - self._pos, 1) if double else 1
        yield


def _scan_to_last(text: str, pos: int, cut: int, batch: list[Any]) -> int:
    """The items from `pos` (an item's start) up to the last BOUNDARY in `text` (at `cut`), scanned as one array
    into `batch` (one call of the scanner, not one an item: a third of a large answer's parse); the position
    after them, or `pos` where the text there is not items alone (read one by one)."""
    whole = "[" + text[pos : cut + 1] + "]"
    try:
        items, end = _SCAN(whole, 0)
    except (StopIteration, ValueError, RecursionError):
        return pos
    if end != len(whole) or not isinstance(items, list):
        return pos
    batch.extend(items)
    return cut + 2

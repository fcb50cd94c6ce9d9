"""A query's label sets kept by their JSON text from one read of it to the next: the fleet's reader asks the same
queries every 15 s, and at 10,000 nodes each answer repeats the labels of the last (an engine's, a node's), so
a series whose text was read before takes its labels as they were made then, and only its value is parsed
(docs/design/queries.md). Everything else is read as before: a run of items that is not exactly as Prometheus
and VictoriaMetrics write them is left to the JSON scanner, whole."""

from __future__ import annotations

import json
import re
from typing import cast

from gpumem_tui.sources.prometheus.series_checks import finite_run, interned, plain_labels

KEEP_READS = 3
"""A query's labels are dropped once this many reads went by without it: the recorded figures are asked every
other refresh (kept_recorded.py); a query whose PromQL names a moment is new at each read."""
HEAD, VALUE, STAMP, TAIL = '{"metric":', ',"value":[', ',"', '"]}'
"""How the servers write an item of a vector's result, around its labels' JSON, its time and its value."""
BETWEEN = TAIL + "," + HEAD
"""Between two items: never inside a label set, whose strings escape each quote."""
_STAMPS = re.compile(r"(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?,)*")
"""The items' times, each followed by a comma: each a JSON number (`float` reads `+1`, `1_0` and `nan` too)."""

Entry = tuple[int, dict[str, str]]
"""The hash `answers._Kept` tells repeated series by, and a label set as read (its values interned)."""
Read = tuple[list[int], list[dict[str, str]], list[float], list[float]]
"""A run's series: each one's Entry hash and labels, value, time."""
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # the C scanner json.loads uses


class LabelMemo:
    """Each query's label sets by text, kept across one reader's reads (the client of each read is given it)."""

    def __init__(self) -> None:
        self._reads = 0
        self._asked: dict[str, int] = {}
        """Each query's PromQL -> the read it was last asked in."""
        self._by_query: dict[str, dict[str, Entry]] = {}

    def turn(self) -> None:
        """A new read begins: the labels of queries not asked in the last KEEP_READS are let go."""
        self._reads += 1
        oldest = self._reads - KEEP_READS
        self._asked = {q: read for q, read in self._asked.items() if read >= oldest}
        self._by_query = {q: kept for q, kept in self._by_query.items() if q in self._asked}

    def of(self, promql: str) -> Memo | None:
        """The query's side of the memo; None where it was not asked in the last KEEP_READS reads (a slow
        fact's, asked every 5 min: its 80,000 label sets are not worth holding)."""
        last = self._asked.get(promql)
        self._asked[promql] = self._reads
        if last is None:
            return None
        return Memo(self, promql, self._by_query.get(promql, {}))

    def keep(self, promql: str, read: dict[str, Entry]) -> None:
        """`read` kept as the query's label sets for its next read."""
        self._by_query[promql] = read


class Memo:
    """One answer's side of the memo: the labels kept from the query's last read (`before`), and those this
    answer reads (`read`), kept for the next once the answer is whole (`done`)."""

    def __init__(self, store: LabelMemo, promql: str, before: dict[str, Entry]) -> None:
        self.store, self.promql, self.before = store, promql, before
        self.read: dict[str, Entry] = {}

    def done(self) -> None:
        self.store.keep(self.promql, self.read)

    def items(self, text: str, start: int, end: int, strings: dict[str, str]) -> Read | None:
        """The series of the items `text[start:end]` holds, or None where they are not all written as the
        servers write them (`{"metric":{...},"value":[time,"value"]}`, a comma between), a label set is not the
        API's (strings, none too long), a time is not a plain number, or a value an infinity, no number or not
        printable: those are the scanner's, which says why. All in a few calls over the run, none an item."""
        if not text.startswith(HEAD, start, end) or not text.endswith(TAIL, start, end) or end - start < 25:
            return None
        # each item's labels and its time and value, alternating: neither separator is ever inside a label set
        parts = text[start + len(HEAD) : end - len(TAIL)].replace(BETWEEN, VALUE).split(VALUE)
        texts, rests = parts[0::2], parts[1::2]
        both = STAMP.join(rests).split(STAMP)
        stamps, values = both[0::2], both[1::2]
        if len(texts) != len(rests) or len(both) != 2 * len(rests):
            return None
        # an instant query's items are all of its one moment: one time checked and made for the run
        once = stamps.count(stamps[0]) == len(stamps)
        if not _STAMPS.fullmatch(stamps[0] + "," if once else ",".join(stamps) + ","):
            return None
        if not "".join(values).isprintable():  # a control character JSON forbids raw, which `float` takes as space
            return None
        entries = list(map(self.before.get, texts))
        if None in entries and not _made(texts, entries, strings):
            return None
        try:
            numbers = list(map(float, values))
            times = [float(stamps[0])] * len(stamps) if once else list(map(float, stamps))
        except ValueError:  # a value that is not a number
            return None
        if not finite_run(numbers, times):
            return None
        made = cast(list[Entry], entries)  # every one made above
        self.read.update(zip(texts, made, strict=True))
        keys, labels = zip(*made, strict=True)
        return list(keys), list(labels), numbers, times


def _made(texts: list[str], entries: list[Entry | None], strings: dict[str, str]) -> bool:
    """The entries not kept made in place, their label sets scanned in one call and checked as
    `answers._instants` checks them (`plain_labels`); False where one is not a label set it would keep whole."""
    missing = [i for i, entry in enumerate(entries) if entry is None]
    whole = "[" + ",".join(texts[i] for i in missing) + "]"
    try:
        read, end = _SCAN(whole, 0)
        if end != len(whole) or len(read) != len(missing):  # each text one JSON value, all of it
            return False
    except (StopIteration, ValueError, RecursionError):
        return False
    if not plain_labels(read):
        return False
    for i, labels in zip(missing, read, strict=True):
        entries[i] = (hash(frozenset(interned(labels, strings).items())), labels)
    return True

"""A query's label sets kept from one read to the next (label_memo.py): an answer read again through the memo
is the answer the scanner reads (every series, value, time and warning), whatever its items hold and however
its text is cut; a label set read before is the very object made then; a query not asked for a few reads is let
go."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpumem_tui.sources.prometheus.answers import Answer, PrometheusError, Result, read_vector
from gpumem_tui.sources.prometheus.label_memo import KEEP_READS, LabelMemo

URL = "http://prometheus:9090/api/v1/query"
label_text = st.text(max_size=12)
value_text = st.sampled_from(["0", "0.25", "1e3", "-2", "NaN", "+Inf", "-Inf", "one", "", "1_0", " 1", "0x10"])
stamp = st.sampled_from([0, 1, 1733400000, 1733400000.125, -5, 1e9, 2.5e-3]) | st.floats(0, 2e9)
series_item = st.fixed_dictionaries(
    {
        "metric": st.dictionaries(st.sampled_from(["__name__", "pod", "node", "model_name", "v"]), label_text),
        "value": st.tuples(stamp, value_text),
    }
)
odd_item = st.sampled_from(
    [
        {"metric": {"pod": "a"}, "value": [1, "1"], "extra": "x"},
        {"value": [1, "1"], "metric": {"pod": "b"}},
        {"metric": {"pod": 5}, "value": [1, "1"]},
        {"metric": {"pod": {"x": "y"}}, "value": [1, "1"]},
        {"metric": {"pod": '"]},{"metric":'}, "value": [1, "2"]},
        {"metric": {"pod": ',"value":['}, "value": [1, "3"]},
        {"metric": {"pod": "p" * 2000}, "value": [1, "4"]},
        {"metric": {"pod": "c"}, "value": ["1", "5"]},
        {"metric": {"pod": "d"}, "value": [1, 6]},
        {"metric": {"pod": "e"}},
        5,
    ]
)


def body_of(items: list, compact: bool = True) -> bytes:
    answer = {"status": "success", "data": {"resultType": "vector", "result": items}}
    if compact:
        return json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode()
    return json.dumps(answer, indent=1).encode()


def read(body: bytes, memo: LabelMemo | None, size: int = 2**16, promql: str = "q") -> Result:
    answer = Answer(URL, "vector", {}, None if memo is None else memo.of(promql))
    try:
        sink = answer.sink(200)
        for start in range(0, len(body), size):
            sink(body[start : start + size])
        return answer.vector()
    finally:
        answer.release()


def same(a: Result, b: Result) -> bool:
    """The same series (NaN equal to NaN), in the same order, with the same warnings (in any order: which note
    comes first follows where the text was cut, the scanner's as the memo's)."""
    if sorted(a.warnings) != sorted(b.warnings) or len(a.series) != len(b.series):
        return False
    for x, y in zip(a.series, b.series, strict=True):
        both_nan = math.isnan(x.value) and math.isnan(y.value)
        if x.labels != y.labels or x.timestamp != y.timestamp or not (both_nan or x.value == y.value):
            return False
    return True


def as_the_scanner(body: bytes, memo: LabelMemo, size: int = 2**16) -> None:
    """`body` read through the memo as the scanner alone reads it: the same series, or the same error."""
    try:
        expected = read_vector(URL, 200, body)
    except PrometheusError as error:
        with pytest.raises(PrometheusError, match=str(error).split(":")[0]):
            read(body, memo, size)
        return
    assert same(read(body, memo, size), expected)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(series_item | odd_item, max_size=12),
    st.lists(series_item, max_size=12),
    st.sampled_from([7, 64, 300, 2**16]),
    st.booleans(),
)
def test_an_answer_read_again_through_the_memo_is_the_scanner_s(first, second, size, compact):
    """The memo's reads (the first fills it, the second mostly hits) are what the scanner alone reads, or the
    same error, for any items, a piece size and compact or indented JSON."""
    memo = LabelMemo()
    for items in (first, first, first + second, second + first):  # the first read of a query keeps none
        memo.turn()
        as_the_scanner(body_of(items, compact), memo, size)


def many(count: int, value: str = "0.5", pod: str = "vllm") -> list[dict]:
    return [
        {"metric": {"__name__": "vllm:kv_cache_usage_perc", "pod": f"{pod}-{i}", "engine": "0"}, "value": [1.5, value]}
        for i in range(count)
    ]


def reads(memo: LabelMemo, promql: str = "q", times: int = 2) -> None:
    """The query asked in `times` reads before: from its second, the memo keeps its labels."""
    for _ in range(times):
        memo.turn()
        read(body_of(many(1)), memo, promql=promql)


def test_a_label_set_read_before_is_the_object_made_then():
    """A label set of the last read is taken, not made again (what the memo saves); a new one is made. The
    scanner reads the item after a piece's last boundary alone (the answer's last among them): not memoised."""
    memo = LabelMemo()
    reads(memo, times=1)
    memo.turn()
    first = read(body_of(many(500)), memo)
    memo.turn()
    second = read(body_of(many(500, "0.75") + many(3, "0.75", pod="new")), memo)
    taken = sum(a.labels is b.labels for a, b in zip(first.series, second.series[:500], strict=True))
    assert 495 <= taken < 500
    assert [s.value for s in second.series] == [0.75] * 503
    assert [s.labels["pod"] for s in second.series[500:]] == ["new-0", "new-1", "new-2"]
    assert all(s.labels is not a.labels for s in second.series[500:] for a in first.series[:3])


def test_a_query_s_first_read_keeps_nothing():
    """A query asked once in KEEP_READS reads (a slow fact's, every 5 min) is read as ever, its labels not held."""
    memo = LabelMemo()
    memo.turn()
    assert memo.of("q") is None
    for _ in range(KEEP_READS + 1):
        memo.turn()
    assert memo.of("q") is None
    memo.turn()
    assert memo.of("q") is not None


def test_the_same_labels_twice_in_an_answer_are_kept_once_with_a_note():
    memo = LabelMemo()
    for _ in range(3):
        memo.turn()
        got = read(body_of(many(100) + many(100)), memo)
        assert len(got.series) == 100
        assert any("the labels of an earlier series" in w for w in got.warnings)


def test_a_query_not_asked_for_a_few_reads_is_let_go():
    memo = LabelMemo()
    reads(memo, "kept", 1)
    reads(memo, "dropped", 1)
    memo.turn()
    first = read(body_of(many(50)), memo, promql="kept")
    read(body_of(many(50)), memo, promql="dropped")
    for _ in range(KEEP_READS):
        memo.turn()
        again = read(body_of(many(50)), memo, promql="kept")
        assert again.series[0].labels is first.series[0].labels
    memo.turn()
    assert memo.of("kept") is not None
    assert memo.of("dropped") is None


def test_a_failed_answer_keeps_the_last_read_s_labels():
    """An answer cut short (no JSON) is an error, and the memo keeps what the last whole read made."""
    memo = LabelMemo()
    reads(memo, times=1)
    memo.turn()
    first = read(body_of(many(200)), memo)
    memo.turn()
    with pytest.raises(PrometheusError):
        read(body_of(many(200))[:-40], memo)
    memo.turn()
    assert read(body_of(many(200)), memo).series[7].labels is first.series[7].labels


@pytest.mark.parametrize("alone", [False, True], ids=["among others", "the run's one time"])
@pytest.mark.parametrize(
    "stamp", ["+1", "1_0", "01", "1.", ".5", "NaN", "Infinity", "-0", "1e5", "1E+5", "2.5e-3", "1e308", "1e400"]
)
def test_a_time_no_json_number_is_the_scanner_s_to_judge(stamp, alone):
    """A time `float` reads and JSON does not (`+1`, `1_0`) is no number to the memo either, and times whose sum
    passes a float's range (`1e308`) are read one by one: the answer reads as the scanner reads it, or fails as
    it fails; the same where it is the time of every item the memo reads at once (an instant query's, checked
    once for the run: all but the last item, which the scanner reads)."""
    times = [stamp if (i < 39 if alone else i % 2 == 0) else "1" for i in range(40)]
    result = ",".join(f'{{"metric":{{"pod":"p{i}"}},"value":[{at},"1"]}}' for i, at in enumerate(times))
    body = f'{{"status":"success","data":{{"resultType":"vector","result":[{result}]}}}}'.encode()
    memo = LabelMemo()
    for _ in range(3):
        memo.turn()
        as_the_scanner(body, memo)


@pytest.mark.parametrize("value", ["1\t", "\n1", "1\r", "\x0b1", "1\x0c", "\x1f1", " 1", "1_0", "\u20281"])
def test_a_value_no_json_string_is_the_scanner_s_to_judge(value):
    """A value `float` reads with a control character JSON forbids raw in a string (a proxy's spoil) fails the
    answer as the scanner fails it, not read by the memo; one JSON allows reads the same either way."""
    result = ",".join(f'{{"metric":{{"pod":"p{i}"}},"value":[1,"{"1" if i % 2 else value}"]}}' for i in range(40))
    body = f'{{"status":"success","data":{{"resultType":"vector","result":[{result}]}}}}'.encode()
    memo = LabelMemo()
    for _ in range(3):
        memo.turn()
        as_the_scanner(body, memo)

"""A query API answer read as it streams (answer_stream.py, answers.py): the same items and envelope however the
text is cut into pieces, white space and key order as a server may send them; what is no JSON said so; and a
query's answer never held whole (the memory a read takes beyond the series it keeps)."""

from __future__ import annotations

import asyncio
import json
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpumem_tui.sources.prometheus import answer_stream
from gpumem_tui.sources.prometheus.answer_stream import AnswerStream, NotJson
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
from tests.sources.prometheus.fake import answering

scalar = st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats(allow_nan=False) | st.text(max_size=8)
value = st.recursive(scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner))
item = (
    st.fixed_dictionaries(
        {
            "metric": st.dictionaries(st.text(max_size=6), st.text(max_size=6)),
            "value": st.tuples(st.floats(0, 2e9), st.text()),
        }
    )
    | value
)


def read(pieces: list[bytes]) -> tuple[AnswerStream, list]:
    items: list = []
    stream = AnswerStream(items.extend)
    for piece in pieces:
        stream.feed(piece)
    stream.close()
    return stream, items


def cut(body: bytes, at: list[int]) -> list[bytes]:
    edges = sorted({0, len(body), *(i % (len(body) + 1) for i in at)})
    return [body[a:b] for a, b in zip(edges, edges[1:], strict=False)]


@given(
    st.lists(item, max_size=8),
    st.lists(st.text(max_size=30), max_size=2),
    st.sampled_from([None, 1, 2, "compact"]),
    st.booleans(),
    st.lists(st.integers(0, 10**6), max_size=12),
)
def test_any_cut_of_any_answer_reads_as_the_whole(items, warnings, indent, result_first, at):
    """`compact`: written as Prometheus writes it, no white space (items scanned together up to the last
    boundary between two)."""
    data = {"result": items, "resultType": "vector"} if result_first else {"resultType": "vector", "result": items}
    answer = {"warnings": warnings, "data": data, "status": "success"}
    body = _dumped(answer, indent)
    stream, got = read(cut(body, at))
    assert got == json.loads(body)["data"]["result"]
    assert stream.streamed and stream.data == {"resultType": "vector"}
    assert stream.top == {"warnings": warnings, "status": "success"}


def _dumped(answer: object, indent: int | str | None) -> bytes:
    if indent == "compact":
        return json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode()
    return json.dumps(answer, indent=indent, ensure_ascii=False).encode()


BOUNDARY_INSIDE = [
    {"metric": {"pod": '},{"metric":'}, "value": [1, "1"]},
    [{"a": {}}, {"metric": {"pod": "x"}, "value": [2, "2"]}],
    {"metric": {"nested": [{"b": {}}, {"metric": {}}]}, "value": [3, "3"]},
    {"metric": {"pod": "y"}, "value": [4, "4"]},
]
"""Items that hold the text of a boundary between two items where it is none: in a label's value, and in a
value nested in an item."""


@pytest.mark.parametrize("size", [1, 7, 64, 2**16])
@pytest.mark.parametrize("result", [BOUNDARY_INSIDE, BOUNDARY_INSIDE[::-1]], ids=["in-the-middle", "last"])
def test_a_boundary_s_text_inside_an_item_is_no_boundary(size, result):
    body = _dumped({"status": "success", "data": {"resultType": "vector", "result": result}}, "compact")
    _, items = read([body[i : i + size] for i in range(0, len(body), size)])
    assert items == result


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>502 Bad Gateway</body></html>",
        b'{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}',  # cut short
        b'{"status": "success"} trailing',
        b'{"status": "success", "data": {"result": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}}",
        b'{"status": "succ\xff\xfe"}',
        b"",
        b"[]",
    ],
    ids=["html", "cut", "trailing", "deep", "not-utf8", "empty", "array"],
)
def test_what_is_no_json_object_is_said_so(body):
    with pytest.raises(NotJson):
        read(cut(body, [7, 300]))


def test_a_long_value_cut_into_many_pieces_is_tried_a_few_times(monkeypatch):
    """A label of 4 MB sent 1 KB at a time: tried again each time its text doubled, not at each piece."""
    tries = []

    def scan(text, pos):
        tries.append(pos)
        return answer_stream.json.JSONDecoder().scan_once(text, pos)

    monkeypatch.setattr(answer_stream, "_SCAN", scan)
    result = [{"metric": {"pod": "p" * 4 * 2**20}, "value": [1, "1"]}]
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()
    _, items = read([body[i : i + 1024] for i in range(0, len(body), 1024)])
    assert items == result
    assert len(tries) < 40


def test_a_query_never_holds_its_answer_whole():
    """20,000 series (about 5 MB): what a query holds beyond the series it returns stays under the answer's size
    (a piece of text, and the labels' hashes that tell a series repeated). Parsed whole, the answer's bytes and
    its parsed tree were held together: 7 times its size."""
    result = [
        {
            "metric": {
                "__name__": "DCGM_FI_DEV_FB_USED",
                "Hostname": f"node-{i // 8}",
                "UUID": f"GPU-{i:08d}-0000-4000-8000-000000000000",
                "gpu": str(i % 8),
                "instance": f"10.0.{i // 2048}.{i // 8 % 256}:9400",
                "modelName": "NVIDIA H100 80GB HBM3",
            },
            "value": [1767225720.0, str(70_000 + i)],
        }
        for i in range(20_000)
    ]
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()
    del result

    async def ask(url: str) -> tuple[int, int, int]:
        async with PrometheusClient(Connection(url)) as client:
            tracemalloc.start()
            try:
                answer = await client.query("DCGM_FI_DEV_FB_USED", 1767225720.0)
                kept, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            return len(answer.series), kept, peak

    with answering(200, body) as url:
        count, kept, peak = asyncio.run(ask(url))
    assert count == 20_000
    assert peak - kept < len(body), f"{(peak - kept) / 1e6:.1f} MB held beyond the series, answer {len(body):,} B"

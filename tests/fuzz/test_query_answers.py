"""Fuzzing the query API's answers: generated vector answers (labels of every JSON type, values as strings,
numbers, null, lists, times that are no number, series repeated, items that are no object) through the client's
reading and the fleet's join (`fleet.build`, every query given the answer).

The invariant: no exception but a PrometheusError; every series read holds string labels no longer than the cap
and a float; no two series alike; every item either read or counted in a note; the join makes its records."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.sources.prometheus.answers import read_vector
from gpumem_tui.sources.prometheus.fleet import FULL, build
from gpumem_tui.sources.prometheus.series_checks import MAX_LABEL_CHARS
from tests.fuzz.test_metrics import HOSTILE, NUMBERS

LABELS = ["__name__", "Hostname", "UUID", "gpu", "modelName", "pod", "exported_pod", "namespace", "code", "instance"]
NAMES = ["DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED", "vllm:kv_cache_usage_perc"]
json_value = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.just([])
text = st.text(alphabet=st.sampled_from(HOSTILE + "abc-09."), max_size=12) | st.sampled_from(NAMES)
label_value = text | st.just("x" * (MAX_LABEL_CHARS + 5)) | json_value
metric = st.dictionaries(st.sampled_from(LABELS), label_value, max_size=6) | json_value | st.lists(text, max_size=2)
sample = st.sampled_from(NUMBERS) | json_value
stamp = st.just(1767225600.0) | st.sampled_from(["1767225600", "NaN"]) | json_value | st.just(10**400)
pair = st.tuples(stamp, sample).map(list) | st.lists(sample, max_size=3) | json_value
item = st.fixed_dictionaries({"metric": metric, "value": pair}) | st.fixed_dictionaries({"value": pair}) | json_value


@given(st.lists(item, max_size=12), st.integers(1, 3))
def test_any_answer_is_read_series_by_series(items, repeat):
    items = items * repeat
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": items}}).encode()
    answer = read_vector("http://prometheus", 200, body)
    keys = [frozenset(s.labels.items()) for s in answer.series]
    assert len(set(keys)) == len(keys)
    for s in answer.series:
        assert all(isinstance(v, str) and len(v) <= MAX_LABEL_CHARS for v in s.labels.values())
        assert isinstance(s.value, float) and math.isfinite(s.timestamp)
    skipped = sum(int(note.split(" ")[0].replace(",", "")) for note in answer.warnings if " skipped " in note)
    assert len(answer.series) + skipped == len(items)
    assert all(len(note) < 400 and "\x1b" not in note for note in answer.warnings)
    build("fuzz", 1767225600.0, dict.fromkeys(FULL, answer), {}, stale=stale)

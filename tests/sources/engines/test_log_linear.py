"""The startup-log parser stays linear on long and hostile lines. Checked on the regexes' form (parsed with
the stdlib's own regex parser) and by counting operations, never by wall-clock time; `bench/parse_log.py`
prints the times."""

from __future__ import annotations

import re
from pathlib import Path
from re import _constants as sre
from re import _parser as sre_parse

import pytest

from gpumem_tui.sources.engines import logconfig, logoom, logparse
from gpumem_tui.sources.engines.logparse import parse_log
from gpumem_tui.sources.engines.logpatterns import RULES

DATA = Path(__file__).resolve().parents[2] / "data"
SEARCHED = {
    **{f"rule {r.name}": r.pattern for r in RULES},
    **{f"oom {name}": pattern for name, pattern in logoom._ONE.items()},
    "oom device": logoom._DEVICE,
    "oom process": logoom._PROCESS,
    "config pair": logconfig._PAIR,
    "profile pair": logconfig._PROFILE_PAIR,
    "dict pair": logconfig._DICT_PAIR,
}
"""Every pattern run with search()/finditer() over a whole line: each may start at any position."""


def _unbounded(item) -> bool:
    op, av = item
    return op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and av[1] == sre.MAXREPEAT


def _walk(items):
    for op, av in items:
        yield op, av
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            yield from _walk(av[2])
        elif op == sre.SUBPATTERN:
            yield from _walk(av[3])
        elif op == sre.BRANCH:
            for branch in av[1]:
                yield from _walk(branch)


def _first(items):
    """The first item a match must try, looking into groups."""
    op, av = items[0]
    return _first(av[3]) if op == sre.SUBPATTERN else (op, av)


def _is_digit_class(av) -> bool:
    return list(av) == [(sre.IN, [(sre.CATEGORY, sre.CATEGORY_DIGIT)])]


@pytest.mark.parametrize("name", sorted(SEARCHED))
def test_no_search_pattern_starts_with_an_unguarded_run(name: str) -> None:
    """A search that starts with `\\w+`, `[A-Z]+` or `\\d+` re-scans a long run from each of its positions
    (quadratic); a negative look-behind lets a match start only where the run starts."""
    items = list(sre_parse.parse(SEARCHED[name].pattern))
    if items[0][0] == sre.AT:  # anchored: one start only
        return
    first = _first(items)
    if _unbounded(first):
        assert items[0][0] == sre.ASSERT_NOT, f"{name} starts with an unbounded run and no look-behind"


@pytest.mark.parametrize("name", sorted(SEARCHED))
def test_every_number_read_has_bounded_digits(name: str) -> None:
    """A number no engine writes is no reading: never an infinity in --json, never a 5,000-digit int."""
    for op, av in _walk(list(sre_parse.parse(SEARCHED[name].pattern))):
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and _is_digit_class(av[2]):
            assert av[1] != sre.MAXREPEAT, f"{name} reads an unbounded digit run"


def test_a_huge_number_is_no_reading() -> None:
    log = parse_log("Model loading took " + "9" * 400 + " GiB and 3.2 seconds\nGPU KV cache size: 1,000 tokens\n")
    assert log.weights_gib is None
    assert log.kv_cache_tokens == 1000
    config = "Initializing a V1 LLM engine (v0.19.0) with config: model='m', max_seq_len=" + "9" * 400 + ", x=1"
    assert parse_log(config).max_model_len is None and parse_log(config).model == "m"
    args = parse_log("non-default args: {'gpu_memory_utilization': nan, 'max_model_len': 1e400}")
    assert args.gpu_memory_utilization is None and args.max_model_len is None


@pytest.fixture
def clue_reads(monkeypatch) -> list[int]:
    """How often a wrapped out-of-memory message is read again."""
    calls = [0]
    original = logparse.with_more_clues

    def counting(failure, joined):
        calls[0] += 1
        return original(failure, joined)

    monkeypatch.setattr(logparse, "with_more_clues", counting)
    return calls


def test_a_wrapped_oom_message_is_followed_a_bounded_number_of_lines(clue_reads) -> None:
    lines = ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."]
    lines += [f"Process {pid} has 1.00 GiB memory in use." for pid in range(1000, 3000)]
    log = parse_log("\n".join(lines) + "\n")
    oom = log.failures[0].oom
    assert oom is not None and oom.tried_to_allocate_bytes == 2 * 2**30
    assert 1 <= len(oom.processes) <= logoom.MAX_PROCESSES
    assert clue_reads[0] <= logparse.MAX_OOM_CHARS // 30  # re-read once per wrapped line, then no more


def test_a_real_wrapped_message_is_still_read_whole() -> None:
    text = (DATA / "torch_oom" / "template_wrapped_private_pools.log").read_text()
    oom = parse_log(text).failures[0].oom
    assert oom.private_pools_bytes is not None and oom.reserved_unallocated_bytes is not None


@pytest.mark.parametrize(
    "line",
    [
        "GPU KV cache size: 12,345 tokens",
        "INFO 04-22 15:58:20 [kv_cache_utils.py:1] GPU KV cache size: 12,345 tokens",
        "(EngineCore pid=7) INFO 04-22 15:58:20 [kv_cache_utils.py:1] GPU KV cache size: 12,345 tokens",
        "(Worker_TP1  pid=7) INFO 04-22 15:58:20 [kv_cache_utils.py:1] GPU KV cache size: 12,345 tokens",
    ],
)
def test_guarded_patterns_read_what_they_read_before(line: str) -> None:
    assert parse_log(line).kv_cache_tokens == 12345


def test_config_pairs_still_read_the_first_occurrence() -> None:
    text = "Initializing a V1 LLM engine (v0.9.0) with config: model='org/m', max_seq_len=4096, xmax_seq_len=1"
    log = parse_log(text)
    assert (log.model, log.max_model_len, log.vllm_version) == ("org/m", 4096, "v0.9.0")
    assert re.search(logconfig._PAIR, "aaaa") is None

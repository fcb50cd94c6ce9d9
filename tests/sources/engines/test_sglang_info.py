"""An SGLang server's own settings, read over real HTTP from the mock server's `/get_server_info` and
`/get_model_info` (SGLang 0.5.6's shapes), carried on its records; hostile answers end in a note, never a crash,
and its text is kept as sent and shown literally."""

from __future__ import annotations

import json
import urllib.request

import pytest

from gpumem_tui.demo.engine_server import MockEngineServer
from gpumem_tui.diagnosis.sglang_plan import stated
from gpumem_tui.sources.engines.endpoints import endpoint
from gpumem_tui.sources.engines.scraper import INFO_MAX_BYTES, Scraper
from gpumem_tui.units import GIB

SETTINGS = {
    "version": "0.5.6",
    "tp_size": 2,
    "mem_fraction_static": 0.835,
    "max_total_tokens": None,
    "max_running_requests": 2049,
    "chunked_prefill_size": 8192,
    "cuda_graph_max_bs": 256,
    "page_size": 1,
    "context_length": 131072,
    "kv_cache_dtype": "auto",
    "max_total_num_tokens": 416748,
    "weights_bytes": 8 * GIB,
    "kv_cache_bytes": 25 * GIB,
    "cuda_graph_bytes": GIB,
}


@pytest.fixture
def sglang(make_engine):
    state = make_engine(engine="sglang", tensor_parallel_size=2, kv_pool_tokens=416748, sglang=SETTINGS)
    with MockEngineServer([state], "sglang") as server:
        yield server


async def _record(server: MockEngineServer):
    async with Scraper([endpoint(server.url)]) as scraper:
        [status] = await scraper.scrape()
    assert status.state == "ok", status.error
    [record] = status.records
    return record


def test_the_mock_answers_in_sglang_s_shape(sglang) -> None:
    with urllib.request.urlopen(sglang.url + "/get_server_info", timeout=5) as answer:  # noqa: S310 - loopback
        info = json.load(answer)
    assert len(info) > 280  # every ServerArgs field of 0.5.6, the scheduler's answer, internal_states, version
    assert (info["tp_size"], info["mem_fraction_static"], info["max_total_num_tokens"]) == (2, 0.835, 416748)
    assert info["internal_states"][0]["memory_usage"] == {
        "weight": 8.0,
        "kvcache": 25.0,
        "token_capacity": 416748,
        "graph": 1.0,
    }
    with urllib.request.urlopen(sglang.url + "/get_model_info", timeout=5) as answer:  # noqa: S310 - loopback
        assert json.load(answer)["is_generation"] is True


async def test_the_scraper_reads_the_server_s_own_settings(sglang) -> None:
    record = await _record(sglang)
    settings = record.sglang
    assert settings is not None and settings.notes == []
    assert (settings.tp_size, settings.mem_fraction_static, settings.max_total_num_tokens) == (2, 0.835, 416748)
    assert (settings.chunked_prefill_size, settings.cuda_graph_max_bs, settings.page_size) == (8192, 256, 1)
    assert (settings.context_length, settings.max_running_requests, settings.version) == (131072, 2049, "0.5.6")
    assert (settings.weights_bytes, settings.kv_cache_bytes, settings.cuda_graph_bytes) == (8 * GIB, 25 * GIB, GIB)
    assert settings.model_path == "meta-llama/Llama-3.1-8B-Instruct" and settings.is_generation is True
    assert record.kv_pool_tokens == 416748  # its pool from its metrics: sglang:max_total_num_tokens


async def test_a_vllm_server_is_never_asked(make_engine) -> None:
    with MockEngineServer([make_engine()], "vllm-v1") as server:
        record = await _record(server)
    assert record.sglang is None and "sglang" not in record.model_dump()


HOSTILE = {
    "not JSON": (b"<html>502</html>", "/get_server_info: not JSON; the settings it holds are unknown"),
    "a list": (b"[1, 2]", "/get_server_info: a JSON list, not an object; the settings it holds are unknown"),
    "nested too deep": (b"[" * 100_000, "/get_server_info: not JSON; the settings it holds are unknown"),
    "huge": (
        b'{"pad": "' + b"x" * (INFO_MAX_BYTES + 10) + b'"}',
        f"/get_server_info: payload of {INFO_MAX_BYTES + 21:,} bytes is over the {INFO_MAX_BYTES:,}-byte limit",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
async def test_a_hostile_answer_is_a_note_and_the_metrics_stand(sglang, case: str) -> None:
    body, said = HOSTILE[case]
    sglang.set_info(body)
    record = await _record(sglang)
    assert record.kv_usage_fraction == pytest.approx(0.42) and record.kv_pool_tokens == 416748
    settings = record.sglang
    assert settings is not None and settings.mem_fraction_static is None
    assert any(note.startswith(said) for note in settings.notes), settings.notes
    assert settings.is_generation is True  # /get_model_info still answered


async def test_values_of_the_wrong_kind_are_missing_and_named(sglang) -> None:
    wrong = {
        "tp_size": "two",
        "mem_fraction_static": 1.5,
        "page_size": True,
        "max_total_num_tokens": -5,
        "context_length": 1e400,
        "model_path": "\x1b[31m[bold]llama\n",
        "internal_states": [{"memory_usage": {"weight": "NaN", "kvcache": 25.0}}],
    }
    sglang.set_info(json.dumps(wrong).replace("1e+400", "1e400"))
    settings = (await _record(sglang)).sglang
    assert settings is not None
    assert (settings.tp_size, settings.mem_fraction_static, settings.page_size) == (None, None, None)
    assert (settings.max_total_num_tokens, settings.context_length, settings.weights_bytes) == (None, None, None)
    assert settings.kv_cache_bytes == 25 * GIB
    notes = "\n".join(settings.notes)
    for field in ("tp_size", "mem_fraction_static", "page_size", "max_total_num_tokens", "context_length", "weight"):
        assert f" {field} is " in notes, field
    assert settings.model_path == "\x1b[31m[bold]llama\n"  # kept as sent
    shown = "\n".join(stated(settings))
    assert "model_path \\x1b[31m[bold]llama\\n (from /get_server_info)" in shown  # shown literally, never run
    assert "\x1b" not in shown


async def test_a_server_gone_gives_no_settings(sglang) -> None:
    sglang.stop()  # nothing answers: the metrics fail first, and no settings are made up
    async with Scraper([endpoint(sglang.url)]) as scraper:
        [status] = await scraper.scrape()
    assert status.state == "down" and status.records == []

"""Shared rigs for the engine sources: simulated engine states and loopback engine servers."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from gpumem_tui.demo.engine_server import MockEngineServer
from gpumem_tui.demo.engine_state import EngineState

LLAMA = {
    "id": "llama",
    "engine": "vllm",
    "model": "meta-llama/Llama-3.1-8B-Instruct",
    "port": 8000,
    "pids": [4242],
    "gpus": [0],
    "phase": "ready",
    "format": "bf16",
    "tensor_parallel_size": 1,
    "gpu_memory_utilization": 0.9,
    "max_model_len": 8192,
    "max_num_seqs": 256,
    "block_size": 16,
    "cache_dtype": "auto",
    "weights_bytes_per_gpu": 16_060_522_496,
    "num_gpu_blocks": 29750,
    "kv_usage_fraction": 0.42,
    "requests_running": 12,
    "requests_waiting": 3,
    "preemptions_total": 7,
}


@pytest.fixture
def make_engine() -> Callable[..., EngineState]:
    """A serving Llama-3.1-8B engine on one H100 (29,750 blocks of 16), with any field overridden."""

    def make(**overrides: object) -> EngineState:
        fields = {**LLAMA, **overrides}
        if fields["num_gpu_blocks"] is not None and "kv_pool_tokens" not in overrides:
            fields["kv_pool_tokens"] = fields["num_gpu_blocks"] * fields["block_size"]
        return EngineState(**fields)

    return make


@pytest.fixture
def llama(make_engine) -> EngineState:
    return make_engine()


@pytest.fixture
def engine_servers(llama) -> Iterator[list[MockEngineServer]]:
    """A vLLM V1, a vLLM v0 and an SGLang server, all healthy."""
    servers = [MockEngineServer([llama], flavour).start() for flavour in ("vllm-v1", "vllm-v0", "sglang")]
    yield servers
    for server in servers:
        server.stop()


@pytest.fixture
def faulty_server(llama) -> Iterator[MockEngineServer]:
    """A vLLM V1 server the test makes misbehave."""
    server = MockEngineServer([llama]).start()
    yield server
    server.stop()

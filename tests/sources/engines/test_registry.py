"""A newcomer's engine: one registry entry makes it discovered, scraped over HTTP, parsed and planned as
"not sized", without touching discovery, the parser or the planner."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gpumem_tui.cli import main
from gpumem_tui.diagnosis.autoplan import engine_plans
from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.models import GpuRecord, ProcessRecord, Sample
from gpumem_tui.sources.engines.discovery import survey
from gpumem_tui.sources.engines.parse import parse_metrics
from gpumem_tui.sources.engines.prometheus import Families
from gpumem_tui.sources.engines.registry import Engine, register, unregister
from gpumem_tui.sources.engines.series import SeriesReader

USAGE = "toyserve:kv_usage"
PAYLOAD = f'# TYPE {USAGE} gauge\n{USAGE}{{model="meta-llama/Llama-3.1-8B-Instruct"}} 0.25\n'


def _normalize(families: Families) -> list[EngineRecord]:
    reader = SeriesReader(families, ("model",))
    return [
        EngineRecord(engine="toyserve", model=key[0], kv_usage_fraction=reader.value(USAGE, key))
        for key in reader.keys((USAGE,))
    ]


@pytest.fixture
def toyserve() -> Iterator[Engine]:
    """An engine kind this tool has never heard of, added the way a contributor adds one."""
    entry = register(
        Engine(
            kind="toyserve",
            label="ToyServe",
            starts=lambda argv: bool(argv) and argv[0].endswith("toyserve"),
            words=("toyserve",),
            default_port=9123,
            families=(USAGE,),
            normalize=_normalize,
        )
    )
    yield entry
    unregister("toyserve")


@pytest.fixture
def served() -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 answering /metrics with the toy engine's payload."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = PAYLOAD.encode()
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.usefixtures("toyserve")
def test_a_registered_engine_is_discovered_at_its_default_port_with_its_children():
    found = survey([(10, "/opt/bin/toyserve --model m"), (11, "toy-worker", 10), (12, "/opt/bin/toyserve --port 9200")])
    assert [(e.url, e.engine, e.pids) for e in found.endpoints] == [
        ("http://127.0.0.1:9123", "toyserve", (10, 11)),
        ("http://127.0.0.1:9200", "toyserve", (12,)),
    ]


@pytest.mark.usefixtures("toyserve")
def test_a_registered_engine_is_scraped_and_parsed(served, capsys):
    assert main(["metrics", served, "--json"]) == 0
    [record] = json.loads(capsys.readouterr().out)
    assert (record["engine"], record["model"], record["kv_usage_fraction"]) == (
        "toyserve",
        "meta-llama/Llama-3.1-8B-Instruct",
        0.25,
    )


@pytest.mark.usefixtures("toyserve")
def test_a_payload_of_no_registered_engine_names_the_registered_ones():
    with pytest.raises(ValueError, match="no vLLM, SGLang, llama.cpp, TGI or ToyServe metrics"):
        parse_metrics("# TYPE other gauge\nother 1\n")


@pytest.mark.usefixtures("toyserve")
def test_an_engine_without_a_sizing_model_gets_its_facts_and_no_plan(catalog):
    [record] = parse_metrics(PAYLOAD, "http://127.0.0.1:9123")
    sample = Sample(
        timestamp=1000.0,
        hostname="node",
        source="test",
        gpus=[
            GpuRecord(
                index=0, name="NVIDIA H100 80GB HBM3", memory_total_bytes=80 * 2**30, memory_used_bytes=60 * 2**30
            )
        ],
        processes=[ProcessRecord(pid=10, gpu_index=0, gpu_memory_bytes=60 * 2**30, cmdline=["toyserve"])],
        engines=[EndpointStatus(url="http://127.0.0.1:9123", state="ok", pids=[10], records=[record])],
    )
    [plan] = engine_plans(sample, catalog)
    assert plan.missing == "ToyServe engines are not sized; the plan shows the measurement only"
    assert (plan.prediction, plan.overlay, plan.gpu_indices) == (None, None, [0])
    assert "model meta-llama/Llama-3.1-8B-Instruct (from /metrics)" in plan.found

"""`gpumem-tui metrics URL` on a 5 MB vLLM /metrics against a full prometheus_client parse, whole processes.

The payload is one vLLM V1 server with data parallelism 8 (`engine` 0-7, one per GPU) serving a base model and
8 LoRA adapters (9 `model_name`s): for each of the 72 label pairs, the demo engine's own exposition (gauges,
counters, cache_config_info) and the other 19 histograms of bench/parse_metrics.py with 30 buckets each. It is
served by http.server on 127.0.0.1 (with /v1/models, as vLLM answers it). Both processes fetch it from that
URL: `python -m gpumem_tui metrics URL` as a user runs it, and a process that reads it with urllib and
parses it all with `text_string_to_metric_families`, touching every sample. The figure is their CPU
(user + sys) ratio, goal >= 30x. A second row gives the same ratio for the parse alone, in this process
(`parse_metrics` against the full parse, the payload already in memory): what selecting lines decides.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from light_common import Figure, median_cpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from parse_metrics import BUCKETS, HISTOGRAMS  # noqa: E402
from prometheus_client import CollectorRegistry, Histogram, generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from gpumem_tui.demo import ManualClock, SimulatedNode, load_scenario  # noqa: E402
from gpumem_tui.demo.engine_exposition import exposition  # noqa: E402
from gpumem_tui.sources.engines.parse import parse_metrics  # noqa: E402
from gpumem_tui.sources.engines.prometheus import forget_lines  # noqa: E402

BASE_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
MODELS = (BASE_MODEL, *(f"acme/support-lora-{i}" for i in range(1, 9)))
ENGINES = tuple(str(i) for i in range(8))
FULL_PARSE = """
import sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
text = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode("utf-8", errors="replace")
count = sum(1 for family in text_string_to_metric_families(text) for _ in family.samples)
print(count)
"""


def payload() -> bytes:
    """The exposition described above (about 5 MB)."""
    clock = ManualClock()
    node = SimulatedNode(load_scenario("healthy-8b"), clock=clock)
    clock.set(300)
    served = node.engine_states()[0]
    gauges = _every_engine(exposition("vllm-v1", [served.model_copy(update={"model": m}) for m in MODELS]))
    registry = CollectorRegistry(auto_describe=False)
    for name in HISTOGRAMS[1:]:  # the first, time to first token, is in the demo's exposition
        hist = Histogram(f"vllm:{name}", name, ["model_name", "engine"], buckets=BUCKETS, registry=registry)
        for i, model in enumerate(MODELS):
            for engine in ENGINES:
                for k in range(20):
                    hist.labels(model, engine).observe(0.002 * (k + 1) * (i + 1))
    return gauges + generate_latest(registry)


def _every_engine(text: bytes) -> bytes:
    """The demo's exposition names engine 0 only: each of its series once per engine."""
    lines = []
    for line in text.splitlines():
        copies = [line.replace(b'engine="0"', b'engine="%s"' % e.encode()) for e in ENGINES]
        lines += copies if b'engine="0"' in line else [line]
    return b"\n".join(lines) + b"\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = b""
    models = json.dumps({"object": "list", "data": [{"id": m, "object": "model"} for m in MODELS]}).encode()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's signature
        """Quiet."""

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        answers = {
            "/metrics": (self.body, "text/plain; version=0.0.4"),
            "/v1/models": (self.models, "application/json"),
        }
        body, kind = answers.get(self.path.split("?")[0], (b"not found", "text/plain"))
        self.send_response(200 if kind != "text/plain" else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def figures(base_cpu_s: float, quick: bool) -> list[Figure]:
    del base_cpu_s  # this figure is a ratio of its own two processes
    _Handler.body = payload()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
    runs = 3 if quick else 7
    try:
        ours = median_cpu((sys.executable, "-m", "gpumem_tui", "metrics", url), runs)
        full = median_cpu((sys.executable, "-c", FULL_PARSE, url), max(3, runs // 2))
    finally:
        server.shutdown()
        server.server_close()
    size = len(_Handler.body) / 2**20
    what = f"`metrics URL` on a {size:.1f} MiB vLLM /metrics vs a full parse"
    return [_figure(what, ours, full), _figure("  the parse alone, in process", *_in_process(_Handler.body, runs))]


def _in_process(body: bytes, runs: int) -> tuple[float, float]:
    """CPU seconds of `parse_metrics` and of a full parse of the payload, each the best of a few runs."""
    text = body.decode()
    ours = min(_cpu(lambda: (forget_lines(), parse_metrics(text))) for _ in range(runs))  # each a first parse
    full = min(_cpu(lambda: sum(1 for f in text_string_to_metric_families(text) for _ in f.samples)) for _ in range(2))
    return ours, full


def _cpu(work) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def _figure(what: str, ours: float, full: float) -> Figure:
    ratio = full / ours
    return Figure(what, f"{ratio:.1f}x ({ours * 1000:.0f} / {full * 1000:.0f} ms)", ">= 30x", ratio >= 30)

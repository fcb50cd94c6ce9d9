"""/metrics over HTTP: prometheus_client's WSGI app on the bounded listener (listener.py), with a registry of one
collector, which builds every family afresh from the evaluator's latest evaluation on each scrape (no label set
of an earlier refresh survives) and never samples."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, Metric

from gpumem_tui.export.evaluation import Evaluation, Evaluator
from gpumem_tui.export.labels import Rows
from gpumem_tui.export.limits import Limits
from gpumem_tui.export.listener import Address, BoundedServer
from gpumem_tui.export.measured import engine_rows, gpu_rows, process_rows
from gpumem_tui.export.planned import finding_rows, plan_rows
from gpumem_tui.models import Sample


class EvaluationCollector:
    """A prometheus_client collector over the evaluator's latest evaluation; `top`: processes per GPU."""

    def __init__(self, evaluator: Evaluator, top: int):
        self.evaluator, self.top = evaluator, top

    def collect(self) -> Iterator[Metric]:
        evaluation = self.evaluator.latest  # one refresh, replaced whole by the evaluator
        yield from node_families(evaluation, self.top)
        yield CounterMetricFamily(
            "gpumem_exporter_samples",
            "samples taken from the node since the exporter started",
            value=evaluation.samples,
        )
        yield CounterMetricFamily(
            "gpumem_exporter_failed_refreshes",
            "refreshes that failed since the exporter started",
            value=evaluation.failures,
        )


def node_families(evaluation: Evaluation, top: int) -> list[Metric]:
    """Every gauge family of one evaluation (the exporter's own counters aside): what a scrape publishes
    about the node, and what the simulated fleet (demo/fleet_series.py) writes for a node that runs it."""
    rows = [
        *gpu_rows(evaluation),
        process_rows(evaluation, top),
        *engine_rows(evaluation),
        *plan_rows(evaluation),
        *finding_rows(evaluation),
        *_self_rows(evaluation),
    ]
    return [row.family for row in rows]


def _self_rows(evaluation: Evaluation) -> list[Rows]:
    up = Rows(
        "gpumem_exporter_source_up",
        "1 when the last refresh read the node's GPUs (source='gpus'), 0 when it or the GPU reading failed",
        ("source",),
    )
    finished = Rows("gpumem_exporter_last_evaluation_timestamp_seconds", "when the last refresh ended (Unix time)", ())
    duration = Rows("gpumem_exporter_evaluation_duration_seconds", "how long the last refresh took", ())
    moment = Rows(
        "gpumem_sample_timestamp_seconds",
        "when the sample published was read (Unix time; a demo's or a recording's own clock)",
        ("Hostname",),
    )
    if evaluation.finished_at is not None:
        up.add({"source": "gpus"}, evaluation.sample is not None and gpus_read(evaluation.sample))
        finished.add({}, evaluation.finished_at)
        duration.add({}, evaluation.duration_s)
    if evaluation.sample is not None:
        moment.add({"Hostname": evaluation.sample.hostname}, evaluation.sample.timestamp)
    return [up, finished, duration, moment]


def gpus_read(sample: Sample) -> bool:
    """The GPU reading answered: some GPU, or no error of the NVML source about the node as a whole."""
    return bool(sample.gpus) or not any(e.source == "nvml" and e.gpu_index is None for e in sample.errors)


class ExportServer:
    """The HTTP server in its own thread; `url` is where /metrics is (the port chosen when 0 was asked)."""

    def __init__(self, server: BoundedServer, thread: threading.Thread):
        self.server, self.thread = server, thread
        host = str(server.server_address[0])
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{server.server_port}/metrics"

    def close(self) -> None:
        self.server.close_all()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def serve(evaluator: Evaluator, address: Address, top: int, limits: Limits | None = None) -> ExportServer:
    """Listen at `address` (an OSError when it cannot: the port is in use, the address is not this node's)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(EvaluationCollector(evaluator, top))
    server = BoundedServer(address, make_wsgi_app(registry), limits or Limits())
    thread = threading.Thread(target=server.serve_forever, args=(server.limits.poll_s,), daemon=True)
    thread.start()
    return ExportServer(server, thread)

"""`gpumem-tui export --demo SCENARIO --at SECONDS` scraped over real HTTP publishes the sample, plans and
findings that `snapshot` and `check` give for the same moment: one answer per question."""

from __future__ import annotations

import json
import re

import pytest

from gpumem_tui.app.view import lay_out
from gpumem_tui.cli import main
from gpumem_tui.cli.check_sources import from_demo
from gpumem_tui.diagnosis.autoplan import plan_by_gpu
from gpumem_tui.diagnosis.findings import Finding, Thresholds
from gpumem_tui.diagnosis.findings.node import refresh_failed
from gpumem_tui.diagnosis.history import History
from gpumem_tui.export.evaluation import Evaluation
from gpumem_tui.export.planned import finding_rows
from tests.datafiles import METRICS
from tests.export.exporter import HOSTILE, exporter, hostile_scenario, scrape, value

BANDS = {
    "driver": "driver_reserved",
    "weights": "weights",
    "runtime": "non_torch",
    "activations": "activations",
    "graphs": "cuda_graphs",
    "kv": "kv_cache",
    "reserve": "reserve",
    "spare": "spare",
}
"""The overlay's band kinds and the `band` label each is published under (docs/export.md)."""


def _json(capsys, *args: str) -> dict:
    main(list(args))
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def noisy():
    """noisy-neighbour at 48 s: a notebook holds 20 GiB beside the engine on GPU 0."""
    with exporter("--demo", "noisy-neighbour", "--at", "48") as url:
        yield scrape(url)


def test_gpu_bytes_are_the_samples(noisy, capsys):
    snapshot = _json(capsys, "snapshot", "--demo", "noisy-neighbour", "--at", "48", "--json")
    assert snapshot["gpus"]
    for gpu in snapshot["gpus"]:
        ids = {"gpu": str(gpu["index"]), "UUID": gpu["uuid"]}
        labels = {**ids, "modelName": gpu["name"], "Hostname": snapshot["hostname"], "pci_bus_id": gpu["bus_id"]}
        for field in ("total", "used", "free", "reserved"):
            assert value(noisy, f"gpumem_gpu_memory_{field}_bytes", **labels) == gpu[f"memory_{field}_bytes"], field


def test_gpu_labels_are_the_ones_dcgm_exporter_writes(noisy):
    """dcgm-exporter's own payload (its README) names a GPU `gpu` and `UUID`: the same names join both."""
    payload = (METRICS / "dcgm_exporter_readme_quickstart.prom").read_text(encoding="utf-8")
    theirs = set(re.findall(r"[{,] ?(\w+)=", payload))
    assert theirs == {"gpu", "UUID"}
    for labels, _ in noisy["gpumem_gpu_memory_used_bytes"]:
        assert theirs <= set(labels) and {"Hostname", "modelName", "pci_bus_id"} <= set(labels)


def test_engine_kv_is_the_engines_own(noisy, capsys, catalog):
    snapshot = _json(capsys, "snapshot", "--demo", "noisy-neighbour", "--at", "48", "--json")
    (engine,) = snapshot["engines"]
    (record,) = engine["records"]
    labels = {"endpoint": engine["url"], "model_name": record["model"], "engine": record["engine_index"]}
    assert value(noisy, "gpumem_engine_up", endpoint=engine["url"]) == 1
    assert value(noisy, "gpumem_engine_kv_cache_usage_ratio", **labels) == record["kv_usage_fraction"]
    assert value(noisy, "gpumem_engine_kv_cache_pool_tokens", **labels) == record["kv_pool_tokens"]
    # the pool in bytes is the one the TUI's plan-vs-measured table shows for GPU 0
    checked = from_demo("noisy-neighbour", 48, None, catalog, None, Thresholds())
    history = History()
    history.add(checked.sample)
    judged = lay_out(checked.sample, history, plan_by_gpu(checked.plans), checked.findings, checked.plans)
    (shown,) = [row.measured_bytes for row in judged.gpus[0].rows if row.name == "KV pool"]
    assert shown and value(noisy, "gpumem_engine_kv_cache_pool_bytes", gpu="0", **labels) == shown


def test_findings_are_checks(noisy, capsys):
    checked = _json(capsys, "check", "--demo", "noisy-neighbour", "--at", "48", "--json")
    assert checked["findings"]
    published = {
        (labels["code"], labels["severity"], labels.get("gpu", ""), labels.get("pid", ""), labels.get("endpoint", ""))
        for labels, one in noisy["gpumem_finding_active"]
        if one == 1
    }
    said = {
        (f["code"], f["severity"], _text(f["gpu_index"]), _text(f["pid"]), f["endpoint"] or "")
        for f in checked["findings"]
    }
    assert published == said
    assert len(noisy["gpumem_finding_active"]) == len(checked["findings"])
    # and in words, as check says them (the alerts' annotations quote these)
    words = {(labels["code"], labels["title"], labels["try_this"]) for labels, _ in noisy["gpumem_finding_info"]}
    assert words == {(f["code"], f["title"], f["try_this"]) for f in checked["findings"]}


def test_words_are_cut_and_refresh_failed_s_are_not_published():
    long = Finding(severity="warning", code="plan_note", title="x" * 300, explanation="", try_this="short")
    failed = refresh_failed("OSError: /secret/path")
    _, words = finding_rows(Evaluation(findings=[long, failed], hostname="n"))
    ((labels, _),) = [(s.labels, s.value) for s in words.family.samples]
    assert labels["code"] == "plan_note" and labels["try_this"] == "short"
    assert len(labels["title"]) == 256 and labels["title"] == "x" * 255 + "…"


def _text(number: int | None) -> str:
    return "" if number is None else str(number)


def test_plan_bands_are_the_overlay_the_tui_draws(noisy, catalog):
    checked = from_demo("noisy-neighbour", 48, None, catalog, None, Thresholds())
    drawn = plan_by_gpu(checked.plans)
    assert drawn
    for index, overlay in drawn.items():
        published = {labels["band"]: got for labels, got in noisy["gpumem_plan_bytes"] if labels["gpu"] == str(index)}
        assert published == {BANDS[band.kind]: band.bytes for band in overlay.bands}
        assert sum(published.values()) == overlay.capacity_bytes  # the bands sum to the card
    (plan,) = checked.plans
    (info,) = noisy["gpumem_plan_info"]
    (served,) = [record.model for engine in checked.sample.engines for record in engine.records]
    assert info[0]["endpoint"] == plan.endpoint and info[0]["catalog_model"] == plan.model
    assert info[0]["model_name"] == served and info[0]["engine"] == "0"  # as vLLM labels the engine
    assert info[0]["source"] == plan.label and info[1] == 1
    assert value(noisy, "gpumem_plan_kv_cache_tokens", endpoint=plan.endpoint) == plan.prediction.kv_cache_tokens


def test_processes_that_are_not_engines_only(noisy, capsys):
    snapshot = _json(capsys, "snapshot", "--demo", "noisy-neighbour", "--at", "48", "--json")
    engine_pids = {pid for engine in snapshot["engines"] for pid in engine["pids"]}
    others = [p for p in snapshot["processes"] if p["pid"] not in engine_pids]
    assert others and engine_pids
    for process in others:
        labels = {"gpu": str(process["gpu_index"]), "pid": str(process["pid"]), "process_name": process["name"]}
        assert value(noisy, "gpumem_process_memory_used_bytes", **labels) == process["gpu_memory_bytes"]
    for pid in engine_pids:
        assert value(noisy, "gpumem_process_memory_used_bytes", pid=str(pid)) is None
    assert value(noisy, "gpumem_process_memory_used_bytes", gpu="0", pid="other") == 0  # none left out (N=5)


def test_top_processes_bounds_the_rows_and_the_rest_is_one_other_row(capsys):
    snapshot = _json(capsys, "snapshot", "--demo", "noisy-neighbour", "--at", "48", "--json")
    notebook = next(p for p in snapshot["processes"] if p["name"] == "python3")
    with exporter("--demo", "noisy-neighbour", "--at", "48", "--top-processes", "0") as url:
        series = scrape(url)
    rows = series["gpumem_process_memory_used_bytes"]
    assert [labels["pid"] for labels, _ in rows] == ["other"]
    assert rows[0][1] == notebook["gpu_memory_bytes"]


def test_a_lost_gpu_has_no_memory_series_and_its_finding(capsys):
    checked = _json(capsys, "check", "--demo", "gpu-lost", "--json")
    at = checked["where"].split(" at ")[1].split(" s")[0]
    with exporter("--demo", "gpu-lost", "--at", at) as url:
        series = scrape(url)
    used = {labels["gpu"] for labels, _ in series["gpumem_gpu_memory_used_bytes"]}
    assert used == {"0", "1", "3"}
    assert value(series, "gpumem_finding_active", code="gpu_lost", gpu="2", severity="critical") == 1
    assert value(series, "gpumem_exporter_source_up", source="gpus") == 1  # the others are read


def test_plan_options_as_check_takes_them(capsys):
    options = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--weights", "fp8"]
    checked = _json(capsys, "check", "--demo", "healthy-8b", "--at", "300", "--json", *options)
    with exporter("--demo", "healthy-8b", "--at", "300", *options) as url:
        series = scrape(url)
    (info,) = series["gpumem_plan_info"]
    assert info[0]["source"] == "manual" and info[0]["quantization"] == "fp8"
    codes = {labels["code"] for labels, _ in series["gpumem_finding_active"]}
    assert codes == {f["code"] for f in checked["findings"]} and "weights_mismatch" in codes


def test_a_hostile_process_name_round_trips_through_the_text_format(tmp_path):
    with exporter("--demo", str(hostile_scenario(tmp_path)), "--at", "48") as url:
        series = scrape(url)
    assert value(series, "gpumem_process_memory_used_bytes", pid="3100", process_name=HOSTILE) == 20 * 2**30
    assert "gpumem_fake" not in series


def test_a_recording_is_published_as_check_walks_it(tmp_path, capsys):
    recording = tmp_path / "noisy.jsonl"
    taken = {
        at: _json(capsys, "snapshot", "--demo", "noisy-neighbour", "--at", at, "--record", str(recording), "--json")
        for at in ("40", "45", "48", "50")
    }
    last = taken["48"]  # 8 s into the recording
    checked = _json(capsys, "check", "--replay", str(recording), "--at", "8", "--json")
    with exporter("--replay", str(recording), "--at", "8") as url:
        series = scrape(url)
    assert value(series, "gpumem_gpu_memory_used_bytes", gpu="0") == last["gpus"][0]["memory_used_bytes"]
    published = {(labels["code"], labels["severity"]) for labels, _ in series["gpumem_finding_active"]}
    assert published == {(f["code"], f["severity"]) for f in checked["findings"]}


def test_node_name_names_the_node_of_a_demo_as_of_a_live_node():
    """NODE_NAME (dcgm-exporter's Helm chart sets it from the downward API) is the node's `Hostname` in every
    series, for a simulated node too, so several demo exporters make several nodes of one fleet."""
    with exporter("--demo", "healthy-8b", env={"NODE_NAME": "node-7"}) as url:
        series = scrape(url)
    named = {labels["Hostname"] for samples in series.values() for labels, _ in samples if "Hostname" in labels}
    assert named == {"node-7"}
    assert value(series, "gpumem_finding_active", Hostname="node-7", code="headroom_low") == 1

"""The `promtool test rules` cases of deploy/prometheus/tests/gpumem-alerts.test.yml, one set per alert rule:
it fires `for:` after its finding appears and not before, with the finding's labels (those that route a GPU's
finding to the engine on it among them) and words; it resolves
the scrape after the finding clears; a finding seen in one scrape alone, an info finding and another code's
finding never fire it; without its words series it says the code's meaning. Regenerate the file with
`python3 -m tests.deploy.promtool_cases > deploy/prometheus/tests/gpumem-alerts.test.yml`."""

from __future__ import annotations

import json
import os
import sys

from gpumem_tui.export.alerts import alert_groups
from gpumem_tui.sources.prometheus.rule_files import yaml_text

RULES, TESTS = "deploy/prometheus/gpumem-alerts.yml", "deploy/prometheus/tests"
"""The rule file and the folder of its tests, in the repository: promtool reads `rule_files` from the tests'."""
SCRAPE_S = 15
"""The committed rules' scrape interval (`fleet rules --alerts` without --scrape-interval)."""
NODE = {"instance": "gpu-node-04:9877", "job": "gpumem", "Hostname": "gpu-node-04"}
ENGINE = {
    "endpoint": "http://127.0.0.1:8000",
    "model_name": "meta-llama/Llama-3.1-8B-Instruct",
    "engine": "0",
    "namespace": "serving",
    "pod": "llama-8b-0",
}
PROCESS = {"process_namespace": "research", "process_pod": "jupyter-ana-0"}
"""The pod of the process a finding names (the notebook), apart from the engine's."""
ABOUT_A_GPU = ("headroom_low", "foreign_process", "unattributed_memory", "gpu_lost")
"""Codes about a GPU rather than an engine (docs/deploy.md): the exporter names the engine on that GPU by its
model, index, namespace and pod, not its endpoint (export/workloads.py)."""
TITLE = 'other process on GPU 0: "{{ evil }}" pid 3100 holds 20.00 GiB beside the engine'
"""The words a test series carries: a quote and template braces, which the annotation shows as they are."""
TRY = "ask its owner to move it to another GPU (CUDA_VISIBLE_DEVICES) or stop it"


def series(name: str, labels: dict[str, str], values: str) -> dict:
    inner = ",".join(f"{key}={json.dumps(value)}" for key, value in labels.items())
    return {"series": f"{name}{{{inner}}}", "values": values}


def steps(seconds: int) -> int:
    return seconds // SCRAPE_S


def cases(rule: dict) -> list[dict]:
    """The tests of one alert rule (one code at one severity)."""
    alert, severity = rule["alert"], rule["labels"]["severity"]
    code = rule["expr"].split('code="')[1].split('"')[0]
    waits = steps(_seconds(rule["for"]))
    engine = {k: v for k, v in ENGINE.items() if k != "endpoint"} if code in ABOUT_A_GPU else ENGINE
    finding = {**NODE, **engine, **PROCESS, "code": code, "severity": severity, "gpu": "0", "pid": "3100"}
    shown = 3 * waits  # scrapes the finding is raised: long past `for`
    raised = f"_ 1x{shown - 1} stale"  # raised from the first scrape to the `shown`th, then cleared
    words = {**finding, "title": TITLE, "try_this": TRY}
    fired = {"exp_labels": {**finding, "alertname": alert}, "exp_annotations": _annotations(rule, TITLE, TRY)}
    first = SCRAPE_S
    return [
        {
            "name": f"{alert} {severity}: fires after {rule['for']} with the finding's routing labels and words, "
            "resolves as it clears",
            "interval": f"{SCRAPE_S}s",
            "input_series": [
                series("gpumem_finding_active", finding, raised),
                series("gpumem_finding_info", words, raised),
            ],
            "alert_rule_test": [
                _expect(alert, first + (waits - 1) * SCRAPE_S, []),  # pending, one scrape short of `for`
                _expect(alert, first + waits * SCRAPE_S, [fired]),
                _expect(alert, first + (shown - 1) * SCRAPE_S, [fired]),
                _expect(alert, first + shown * SCRAPE_S, []),  # cleared: resolved
            ],
        },
        {
            "name": f"{alert} {severity}: no page on a one-scrape blip, an info finding or another code",
            "interval": f"{SCRAPE_S}s",
            "input_series": [
                series("gpumem_finding_active", {**finding, "gpu": "1"}, "_ 1 stale"),
                series("gpumem_finding_active", {**finding, "gpu": "2", "severity": "info"}, f"1x{shown}"),
                series("gpumem_finding_active", {**finding, "gpu": "3", "code": "not_this_code"}, f"1x{shown}"),
            ],
            "alert_rule_test": [_expect(alert, at * SCRAPE_S, []) for at in (1, 2, waits + 1, shown)],
        },
        {
            "name": f"{alert} {severity}: without its words series the alert says the code's meaning",
            "interval": f"{SCRAPE_S}s",
            "input_series": [series("gpumem_finding_active", finding, f"1x{shown}")],
            "alert_rule_test": [
                _expect(
                    alert,
                    waits * SCRAPE_S,
                    [
                        {
                            "exp_labels": {**finding, "alertname": alert},
                            "exp_annotations": _annotations(
                                rule,
                                f"{rule['annotations']['meaning']} on gpu-node-04 GPU 0" + _where(engine),
                                "gpumem-tui check -v on gpu-node-04 says what to try",
                            ),
                        }
                    ],
                )
            ],
        },
        *(_shared(rule, finding, waits) if code in ABOUT_A_GPU else []),
    ]


SECOND = {"model_name": "Qwen/Qwen2.5-7B", "engine": "0", "namespace": "team-b", "pod": "qwen-7b-0"}
"""A second engine on the same GPU."""


def _shared(rule: dict, finding: dict[str, str], waits: int) -> list[dict]:
    """A GPU two engines share: the exporter publishes the finding once per engine, so each team gets its own
    alert, with the finding's words."""
    alert, both = rule["alert"], [finding, {**finding, **SECOND}]
    fired = [{"exp_labels": {**f, "alertname": alert}, "exp_annotations": _annotations(rule, TITLE, TRY)} for f in both]
    raised = f"1x{waits + 1}"
    return [
        {
            "name": f"{alert} {rule['labels']['severity']}: a GPU two engines share pages each engine's namespace",
            "interval": f"{SCRAPE_S}s",
            "input_series": [
                *(series("gpumem_finding_active", f, raised) for f in both),
                *(series("gpumem_finding_info", {**f, "title": TITLE, "try_this": TRY}, raised) for f in both),
            ],
            "alert_rule_test": [_expect(alert, waits * SCRAPE_S, fired)],
        }
    ]


def _where(engine: dict[str, str]) -> str:
    return f" ({engine['endpoint']})" if "endpoint" in engine else ""


def _annotations(rule: dict, summary: str, advice: str) -> dict:
    return {"summary": summary, "try": advice, "meaning": rule["annotations"]["meaning"]}


def _expect(alert: str, at_s: int, alerts: list[dict]) -> dict:
    return {"eval_time": f"{at_s}s", "alertname": alert, "exp_alerts": alerts}


def _seconds(duration: str) -> int:
    return int(duration[:-1]) * {"s": 1, "m": 60, "h": 3600}[duration[-1]]


def test_file() -> str:
    (group,) = alert_groups(scrape_interval_s=SCRAPE_S)
    document = {
        "rule_files": [os.path.relpath(RULES, TESTS)],
        "evaluation_interval": f"{SCRAPE_S}s",
        "tests": [case for rule in group["rules"] for case in cases(rule)],
    }
    comments = ("`promtool test rules` cases of gpumem-alerts.yml, written by tests/deploy/promtool_cases.py.",)
    return yaml_text(document, comments)


if __name__ == "__main__":
    sys.stdout.write(test_file())

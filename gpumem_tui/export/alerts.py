"""`gpumem-tui fleet rules --alerts`: alerting rules on the exporter's findings (`gpumem_finding_active`), one
alert per finding code that can warn or be critical, written from the finding registry so a new code gets its
alert. Each severity of a code is its own rule with its own `for:`: a critical finding pages after two
scrape intervals, a warning after twenty (docs/deploy.md says why). The alert keeps the finding's labels
(node, GPU, process, engine, model, namespace, pod, severity) for routing; its annotations quote the
finding's title and what to try from `gpumem_finding_info`, and fall back to the code's meaning."""

from __future__ import annotations

from gpumem_tui.diagnosis.findings.registry import FINDINGS, FindingKind

ACTIVE = "gpumem_finding_active"
WORDS = "gpumem_finding_info"
PAGED = ("critical", "warning")
"""The severities that are alerts; an info finding says the node is as planned or explains a view."""
FOR_SCRAPES = {"critical": 2, "warning": 20}
"""`for:` in scrape intervals: a finding seen in one scrape alone never fires (two for a critical one, which
pages before an out-of-memory error it warns of); a warning lasts minutes before it pages."""
KEY = ("instance", "Hostname", "code", "severity", "gpu", "pid", "endpoint")
"""The labels that find an alert's own `gpumem_finding_info` series (a finding's key, on its exporter)."""


def alert_name(code: str) -> str:
    """`foreign_process` -> `GpuMemForeignProcess`."""
    return "GpuMem" + "".join(part.capitalize() for part in code.split("_"))


def alerted() -> list[FindingKind]:
    """The codes a node's exporter raises that can warn or be critical: each is one alert."""
    return [kind for kind in FINDINGS if "node" in kind.views and set(kind.severities) & set(PAGED)]


def duration(seconds: int) -> str:
    """A Prometheus duration: `30s`, `5m`, `1h`."""
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def alert_groups(matchers: str = "", scrape_interval_s: int = 15, interval_s: int | None = None) -> list[dict]:
    """The alerting group as data (a rule file's `groups`, a PrometheusRule's `spec.groups`). `matchers`: a
    `--selector`'s (`cluster="prod"`), added to every expression; `scrape_interval_s`: how often Prometheus
    scrapes the exporter, which `for:` counts in; `interval_s`: the group's evaluation interval (default: the
    scrape interval)."""
    rules = [
        _rule(kind, severity, matchers, scrape_interval_s)
        for kind in alerted()
        for severity in PAGED
        if severity in kind.severities
    ]
    return [{"name": "gpumem-alerts", "interval": duration(interval_s or scrape_interval_s), "rules": rules}]


def _rule(kind: FindingKind, severity: str, matchers: str, scrape_interval_s: int) -> dict:
    selector = ", ".join(m for m in (f'code="{kind.code}"', f'severity="{severity}"', matchers) if m)
    if "{{" in kind.meaning:
        raise ValueError(f"{kind.code}: its meaning would be read as a template")
    return {
        "alert": alert_name(kind.code),
        "expr": f"{ACTIVE}{{{selector}}} == 1",
        "for": duration(FOR_SCRAPES[severity] * scrape_interval_s),
        "labels": {"severity": severity},
        "annotations": {
            "summary": _quoted("title", f"{kind.meaning} on {{{{ $labels.Hostname }}}}{_WHERE}"),
            "try": _quoted("try_this", "gpumem-tui check -v on {{ $labels.Hostname }} says what to try"),
            "meaning": kind.meaning,
        },
    }


_WHERE = (
    "{{ if $labels.gpu }} GPU {{ $labels.gpu }}{{ end }}{{ if $labels.endpoint }} ({{ $labels.endpoint }}){{ end }}"
)


def _quoted(label: str, otherwise: str) -> str:
    """A template that says the `label` of the alert's own `gpumem_finding_info` series, as the exporter
    published it (text/template: no escaping, no markup), or `otherwise` where there is none."""
    matchers = ",".join(f"{name}=%q" for name in KEY)
    values = " ".join(f"$labels.{name}" for name in KEY)
    return (
        f"{{{{ with printf `{WORDS}{{{matchers}}}` {values} | query }}}}"
        f'{{{{ . | first | label "{label}" }}}}{{{{ else }}}}{otherwise}{{{{ end }}}}'
    )

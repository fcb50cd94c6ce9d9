"""Minimal JSON Schemas of the two prometheus-operator kinds deploy/kubernetes/ uses, written from the
operator's CRDs (monitoring.coreos.com v1, `example/prometheus-operator-crd/` of prometheus-operator, read
at v0.84: field names, types, enums, duration patterns, required fields). `kubernetes-validate` knows only
Kubernetes's own kinds, so these stand in for the CRDs. Stricter than the CRDs in one way on purpose: an
unknown field fails (`additionalProperties: false`), where the API server would silently prune it."""

from __future__ import annotations

DURATION = {
    "type": "string",
    "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$",
}
LABELS = {"type": "object", "additionalProperties": {"type": "string"}}
METADATA = {
    "type": "object",
    "required": ["name", "namespace"],
    "properties": {"name": {"type": "string", "minLength": 1}, "namespace": {"type": "string"}, "labels": LABELS},
    "additionalProperties": False,
}
RELABEL = {
    "type": "object",
    "properties": {
        "action": {
            "enum": [
                "replace", "Replace", "keep", "Keep", "drop", "Drop", "hashmod", "HashMod", "labelmap", "LabelMap",
                "labeldrop", "LabelDrop", "labelkeep", "LabelKeep", "lowercase", "Lowercase", "uppercase",
                "Uppercase", "keepequal", "KeepEqual", "dropequal", "DropEqual",
            ]
        },
        "modulus": {"type": "integer"},
        "regex": {"type": "string"},
        "replacement": {"type": "string"},
        "separator": {"type": "string"},
        "sourceLabels": {"type": "array", "items": {"type": "string", "pattern": "^[a-zA-Z_][a-zA-Z0-9_]*$"}},
        "targetLabel": {"type": "string"},
    },
    "additionalProperties": False,
}  # fmt: skip
SELECTOR = {
    "type": "object",
    "properties": {
        "matchLabels": LABELS,
        "matchExpressions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "operator"],
                "properties": {
                    "key": {"type": "string"},
                    "operator": {"type": "string"},
                    "values": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
    "additionalProperties": False,
}
ENDPOINT = {
    "type": "object",
    "properties": {
        "port": {"type": "string"},
        "path": {"type": "string"},
        "scheme": {"enum": ["http", "https", "HTTP", "HTTPS"]},
        "interval": DURATION,
        "scrapeTimeout": DURATION,
        "honorLabels": {"type": "boolean"},
        "honorTimestamps": {"type": "boolean"},
        "relabelings": {"type": "array", "items": RELABEL},
        "metricRelabelings": {"type": "array", "items": RELABEL},
    },
    "additionalProperties": False,
}


def _kind(kind: str, spec: dict) -> dict:
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "monitoring.coreos.com/v1"},
            "kind": {"const": kind},
            "metadata": METADATA,
            "spec": spec,
        },
        "additionalProperties": False,
    }


SERVICE_MONITOR = _kind(
    "ServiceMonitor",
    {
        "type": "object",
        "required": ["endpoints", "selector"],
        "properties": {
            "endpoints": {"type": "array", "minItems": 1, "items": ENDPOINT},
            "selector": SELECTOR,
            "namespaceSelector": {
                "type": "object",
                "properties": {
                    "any": {"type": "boolean"},
                    "matchNames": {"type": "array", "items": {"type": "string"}},
                },
                "additionalProperties": False,
            },
            "jobLabel": {"type": "string"},
            "targetLabels": {"type": "array", "items": {"type": "string"}},
            "podTargetLabels": {"type": "array", "items": {"type": "string"}},
        },
        "additionalProperties": False,
    },
)
RULE = {
    "type": "object",
    "required": ["expr"],
    "properties": {
        "record": {"type": "string", "pattern": "^[a-zA-Z_:][a-zA-Z0-9_:]*$"},
        "alert": {"type": "string", "minLength": 1},
        "expr": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "for": DURATION,
        "keep_firing_for": DURATION,
        "labels": LABELS,
        "annotations": LABELS,
    },
    # "Only one of `record` and `alert` must be set" (the CRD's words; the operator's webhook checks it).
    "oneOf": [{"required": ["record"]}, {"required": ["alert"]}],
    "additionalProperties": False,
}
PROMETHEUS_RULE = _kind(
    "PrometheusRule",
    {
        "type": "object",
        "properties": {
            "groups": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "minLength": 1},
                        "interval": DURATION,
                        "limit": {"type": "integer"},
                        "query_offset": DURATION,
                        "labels": LABELS,
                        "rules": {"type": "array", "items": RULE},
                    },
                    "additionalProperties": False,
                },
            }
        },
        "additionalProperties": False,
    },
)
SCHEMAS = {"ServiceMonitor": SERVICE_MONITOR, "PrometheusRule": PROMETHEUS_RULE}

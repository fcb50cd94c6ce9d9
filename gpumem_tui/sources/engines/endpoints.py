"""Engine endpoint addresses: what the user typed -> the /metrics and /v1/models URLs, tied to pids."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit


class EndpointError(ValueError):
    """An endpoint the user gave that is not an http(s) URL."""


@dataclass(frozen=True)
class Endpoint:
    """One engine HTTP endpoint and the processes behind it (empty when given by hand)."""

    url: str
    metrics_url: str
    models_url: str
    engine: str | None = None
    pids: tuple[int, ...] = ()
    notes: tuple[str, ...] = field(default=())
    devices: tuple[str, ...] | None = None
    """The GPUs the engine's environment gives it (UUIDs or indices); None when it does not say."""


def endpoint(
    url: str,
    engine: str | None = None,
    pids: tuple[int, ...] = (),
    notes: tuple[str, ...] = (),
    devices: tuple[str, ...] | None = None,
) -> Endpoint:
    """`host:8000`, `http://host:8000` or `http://host:8000/metrics` -> an Endpoint."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError as exc:
        raise EndpointError(f"endpoint {url!r} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError(f"endpoint {url!r} is not an http(s) URL like http://127.0.0.1:8000")
    path = parts.path.rstrip("/")
    base_path = path[: -len("/metrics")] if path.endswith("/metrics") else path
    base = urlunsplit((parts.scheme, parts.netloc, base_path, "", ""))
    metrics = urlunsplit(
        (
            parts.scheme,
            parts.netloc,
            path if path.endswith("/metrics") else base_path + "/metrics",
            parts.query,
            "",
        )
    )
    return Endpoint(
        url=base,
        metrics_url=metrics,
        models_url=base + "/v1/models",
        engine=engine,
        pids=pids,
        notes=notes,
        devices=devices,
    )

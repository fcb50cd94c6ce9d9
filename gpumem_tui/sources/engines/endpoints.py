"""Engine endpoint addresses: what the user typed -> the /metrics and /v1/models URLs, tied to pids."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from gpumem_tui.text import shown_url


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
    """`host:8000`, `http://host:8000` or `http://host:8000/metrics` -> an Endpoint. A user and password in
    it (`http://user:password@host:8000`) go with the requests (basic auth), never into `url`, the endpoint
    as every screen, recording and exported label names it."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    shown = shown_url(text)
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError as exc:  # its words may quote a password (`user:pa/ss@host` reads `pa` as the port)
        why = "its host or port" if "@" in text else exc
        raise EndpointError(f"endpoint {shown!r} is not a valid URL ({why})") from None
    if any("@" in piece for piece in (parts.path, parts.query, parts.fragment)):
        raise EndpointError(f"endpoint {shown!r}: an '@' after the host (a password's '/', '?', '#' percent-encoded)")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError(f"endpoint {shown!r} is not an http(s) URL like http://127.0.0.1:8000")
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
        url=shown_url(base),
        metrics_url=metrics,
        models_url=base + "/v1/models",
        engine=engine,
        pids=pids,
        notes=notes,
        devices=devices,
    )

"""How a finding's title is put together: what went wrong and where first, then who and how much, then the
engine it is about, short (`KV cache full on GPU 6,7: 56 waiting, 120 preemptions/min (Llama-3.1-70B
:8003)`). Cut at 80 columns, a title still says what broke. Every node finding composes its title here;
the fleet's findings can say theirs the same way."""

from __future__ import annotations

from gpumem_tui.text import host_port, loopback


def compose(what: str, where: str = "", who: str = "", engine: str = "") -> str:
    """`what on where: who (engine)`; each part left out when empty. `where`: `GPU 0`, from `gpus()`."""
    text = what + (f" on {where}" if where else "")
    text += f": {who}" if who else ""
    return text + (f" ({engine})" if engine else "")


def gpus(indices: list[int] | tuple[int, ...]) -> str:
    """`GPU 0`, `GPU 6,7`, `GPU 0-3`: runs of three or more written as a range; empty when none is known."""
    if not indices:
        return ""
    ordered = sorted(set(indices))
    runs: list[list[int]] = []
    for index in ordered:
        if runs and index == runs[-1][-1] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return "GPU " + ",".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ",".join(map(str, r)) for r in runs)


def engine_short(url: str | None, model: str | None = None) -> str:
    """`Llama-3.1-70B :8003`: the model without its organisation, and where it answers without what every
    engine on this node shares (the scheme, a local host). The finding's `endpoint` keeps the whole URL."""
    name = model.rsplit("/", 1)[-1] if model else ""
    return f"{name} {address(url)}".strip() if url else name


def address(url: str) -> str:
    """`:8003` for an engine on this host, `node-c:8000` for one elsewhere; anything that is not a URL (a
    pod's name from Prometheus) as it is."""
    if "://" not in url or (found := host_port(url)) is None:
        return url
    host, port = found
    if port is None:
        return host or url
    return f":{port}" if loopback(host) else f"{host}:{port}"


def amount(count: float) -> str:
    """`120`, `1,204`, `0.5`: a count or a rate, with one decimal only where it is small."""
    return f"{count:,.0f}" if abs(count) >= 10 or count == int(count) else f"{count:,.1f}"

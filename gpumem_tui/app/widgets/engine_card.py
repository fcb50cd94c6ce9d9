"""EngineCard: one served model: KV usage gauge, pool vs plan, queue, preemptions, endpoint state."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from gpumem_tui.app.owner import owner
from gpumem_tui.app.tone import state_style, tone
from gpumem_tui.app.widgets.gpu_card import history_levels, spark
from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.measured import gpu_listing
from gpumem_tui.text import literal

GAUGE_WIDTH = 24


class EngineCard(Widget):
    """Everything the engine says about its memory, next to what the plan expected; one widget."""

    DEFAULT_CSS = "EngineCard { height: auto; }"
    content: reactive[tuple] = reactive(tuple)

    def show(
        self,
        endpoint: EndpointStatus,
        record: EngineRecord | None,
        planned_tokens: int | None,
        history: list[float],
        gpus: Sequence[int] = (),
        state: str | None = None,
    ) -> None:
        """`gpus`: where its processes hold (or last held) memory; `state`: what the findings call the engine
        when they say more than its endpoint does: `starting` (not down), `exited` (its last record, from
        before the exit, is not shown as if it still served)."""
        exited = state == "exited"
        self.content = (
            _title(endpoint, record, list(gpus), state, self.app),
            _gauge(None if exited else record, state, self.app),
            _stats(None if exited else record, planned_tokens),
            history_levels(history, 1.0),
        )

    def watch_content(self, old: tuple, new: tuple) -> None:
        """Lay out again only when the number of lines changes (notes come and go)."""
        if _lines(old) != _lines(new):
            self.refresh(layout=True)

    def render(self) -> Text:
        if not self.content:
            return Text("")
        title, gauge, stats, history = self.content
        trend = Text("KV history ", style="dim").append(
            spark(history, max(1, self.size.width - 11), owner(self).glyphs), style="dim")
        return Text("\n").join([title, gauge, stats, trend])


def _lines(content: tuple) -> int:
    return content[2].plain.count("\n") if content else -1


def _title(endpoint: EndpointStatus, record: EngineRecord | None, gpus: list[int], state: str | None, app) -> Text:
    text = Text()
    text.append(record.engine if record else "engine", style="bold")
    text.append(f"  {literal(record.model, '?')}" if record else "")
    text.append(f"  {literal(endpoint.url)}", style="dim")
    text.append(f"  {gpu_listing(gpus)}")
    if state == "starting":
        text.append(f"  starting: {literal(endpoint.error, 'no answer yet')}", style="dim")
        return text
    if state == "exited":
        text.append("  exited (see the findings)", style=tone(app, "error", True))
        return text
    style = state_style(app, endpoint.state)
    text.append(f"  {endpoint.state}", style=style)
    if endpoint.state != "ok":
        age = (
            f" (last good {endpoint.age_s:.0f} s ago)"
            if endpoint.age_s is not None and endpoint.state == "stale"
            else ""
        )
        text.append(f"{age}: {literal(endpoint.error, 'no answer')}", style=style)
    return text


def _gauge(record: EngineRecord | None, state: str | None, app) -> Text:
    usage = record.kv_usage_fraction if record else None
    if usage is None:
        why = "the engine does not export its usage"
        if record is None:
            why = {
                "starting": "no reading: the engine is still loading",
                "exited": "no reading: the engine has exited",
            }.get(state or "", "no reading: the endpoint is down")
        return Text(f"KV cache  n/a ({why})", style="dim")
    filled = round(min(1.0, max(0.0, usage)) * GAUGE_WIDTH)
    # vLLM's own dashboard: orange at 90 %, red at 98 %
    style = tone(app, "error", True) if usage >= 0.98 else tone(app, "warning" if usage >= 0.9 else "success")
    text = Text("KV cache  ")
    text.append(app.glyphs.gauge * filled, style=style)
    text.append(app.glyphs.fill["free"] * (GAUGE_WIDTH - filled), style="dim")
    text.append(f" {usage:.0%}")
    if record and record.kv_pool_tokens:
        text.append(f"  {round(usage * record.kv_pool_tokens):,} of {record.kv_pool_tokens:,} tokens")
    return text


def _stats(record: EngineRecord | None, planned_tokens: int | None) -> Text:
    if record is None:
        return Text("")
    parts = []
    if record.kv_pool_tokens is not None and planned_tokens:
        gap = record.kv_pool_tokens - planned_tokens
        parts.append(f"pool {record.kv_pool_tokens:,} vs plan {planned_tokens:,} tokens ({gap:+,})")
    parts.append(f"running {_n(record.requests_running)}  waiting {_n(record.requests_waiting)}")
    if record.preemptions_per_min is not None:
        parts.append(f"preemptions {record.preemptions_per_min:,.1f}/min")
    elif record.preemptions_total is not None:
        parts.append(f"preemptions {record.preemptions_total:,.0f} total")
    if record.max_model_len:
        parts.append(f"max len {record.max_model_len:,}")
    text = Text("  ".join(parts))
    for note in record.notes:
        text.append(f"\n{literal(note)}", style="dim")
    return text


def _n(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"

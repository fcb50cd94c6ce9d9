"""EngineCard: one served model: KV usage gauge, pool vs plan, queue, preemptions, endpoint state."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive

from gpumem_tui.app.tone import state_style, tone
from gpumem_tui.app.view import EngineView
from gpumem_tui.app.widgets.gpu_card import history_levels, spark
from gpumem_tui.app.widgets.lines import Line, Lines
from gpumem_tui.diagnosis.engine_values import plausible
from gpumem_tui.diagnosis.measured import gpu_listing
from gpumem_tui.engine_records import EndpointStatus, EngineRecord
from gpumem_tui.glyphs import Glyphs
from gpumem_tui.text import literal

GAUGE_WIDTH = 24


@dataclass(frozen=True)
class EngineCardContent:
    """What the card draws: an equal content is not drawn again."""

    title: Text
    gauge: Text
    stats: Text
    """The pool against the plan, queue, preemptions and the engine's notes, a line each."""
    history: tuple[int, ...]


class EngineCard(Lines):
    """Everything the engine says about its memory, next to what the plan expected; one widget, drawn in
    `glyphs`, a line rendered again only when it changed (`Lines`)."""

    DEFAULT_CSS = "EngineCard { height: auto; }"
    content: reactive[EngineCardContent | None] = reactive(None, repaint=False)

    def __init__(self, glyphs: Glyphs) -> None:
        super().__init__()
        self.glyphs = glyphs

    def show(self, view: EngineView) -> None:
        """`view.state`: `starting` (not down), `exited` (its last record, from before the exit, is not shown
        as if it still served)."""
        exited, record, endpoint = view.state == "exited", view.record, view.endpoint
        judged = None if exited or record is None else plausible(record)  # what the findings call true
        self.content = EngineCardContent(
            title=_title(endpoint, record, list(view.gpus), view.state, self.app),
            gauge=_gauge(judged, view.state, self.app, self.glyphs, reported=_reported(record, judged)),
            stats=_stats(judged, view.planned_tokens),
            history=history_levels(view.history, 1.0),
        )

    def watch_content(self) -> None:
        self.redraw()

    def lines(self, width: int) -> list[Line]:
        """The title, the gauge, the stats (the engine's notes a line each) and the KV history at `width`."""
        content = self.content
        if content is None:
            return [Text("")]
        trend = Text("KV history ", style="dim").append(
            spark(content.history, max(1, width - 11), self.glyphs), style="dim"
        )
        return [content.title, content.gauge, *content.stats.split("\n"), trend]


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


def _reported(record: EngineRecord | None, judged: EngineRecord | None) -> float | None:
    """The usage as the engine sent it, where the card shows a judged record."""
    return record.kv_usage_fraction if record is not None and judged is not None else None


def _gauge(
    record: EngineRecord | None,
    state: str | None,
    app,
    glyphs: Glyphs,
    reported: float | None = None,
) -> Text:
    """`record` holds only values that can be true; `reported` is the usage as the engine sent it."""
    usage = record.kv_usage_fraction if record else None
    if usage is None:
        why = "the engine does not export its usage"
        if reported is not None:
            why = f"the engine reports {reported * 100:g} %, which cannot be true"
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
    text.append(glyphs.gauge * filled, style=style)
    text.append(glyphs.fill["free"] * (GAUGE_WIDTH - filled), style="dim")
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

"""PlannerScreen: pick a model, GPU, formats and load; vLLM's plan, its launch line and the fit table recompute as
you type. It opens on the plan it is handed (what runs on the focused GPU), else on the search field."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, OptionList, Select, Static

from gpumem_tui.app.tone import tone
from gpumem_tui.catalog import Catalog, CatalogError, ModelSpec
from gpumem_tui.catalog.hfconfig import read_model_config
from gpumem_tui.diagnosis.overlays import ManualPlan
from gpumem_tui.planner.fit import FitCell, fit_matrix
from gpumem_tui.planner.records import PlanInput
from gpumem_tui.planner.report import cross_check, engine_launch, serving_verdict
from gpumem_tui.planner.serving import EngineOptions, Serving, format_of, serve
from gpumem_tui.planner.vllm import EnginePrediction
from gpumem_tui.planner.vllm.launch import LaunchLine, model_argument
from gpumem_tui.text import literal
from gpumem_tui.units import GB, GIB

FIT_GPUS = ["rtx4090", "l40s", "a100", "h100", "h200", "b200"]
FIT_FORMATS = ["bf16", "fp8", "int4"]
# The TUI draws vLLM's sizing over the GPUs, so the planner decides with it too.
ENGINE = EngineOptions()


PLAN_ERRORS = (ValueError, KeyError, ArithmeticError, CatalogError)
"""What a form's values can raise on their way to a plan: bad input (PlanInputError is a ValueError), a name
not found, a size past what the arithmetic holds, a config.json that cannot be read."""

DEFAULT_GPU = "H100-SXM-80GB"
"""The card a plan is sized for when the node's own is not in the catalog."""


class ModelList(OptionList):
    """The model list, which types to search as its label says: every printable key it gets goes on to the
    search field (PlannerScreen.on_key). Saying so here takes such a key from the screen's bindings while the
    list is focused (Textual leaves a key a focused widget consumes to it), as a text field's; the footer then
    shows only the keys that still act."""

    def check_consume_key(self, key: str, character: str | None) -> bool:  # noqa: ARG002 - Textual's signature
        return character is not None and character.isprintable()


class PlannerScreen(Screen):
    """Attributes down: the catalog and the current plan come in; ctrl+s sends the chosen plan up."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "back"),
        Binding("ctrl+s", "apply", "apply to overlay", priority=True),
        # c where no field types (the lists of choices, the plan); ctrl+o in every field. The footer shows the
        # first of the two that acts where the focus is.
        Binding("c,ctrl+o", "copy", "copy launch line"),
    ]

    def __init__(self, catalog: Catalog, on_apply, current: ManualPlan | None = None, node_gpu: str | None = None):
        """`current`: the plan the form starts from (every field of it), None for the defaults and the search
        field. `node_gpu`: the catalog key of the node's own card, so a plan starts out sized for what it runs
        on."""
        super().__init__()
        self.catalog, self.on_apply, self.current = catalog, on_apply, current
        self.models = dict(catalog.models)
        """The catalog's models, and the one `current` runs where the catalog lacks it (a cached HF config)."""
        if current is not None:
            self.models.setdefault(current.model.id, current.model)
        self.model_id = current.model.id if current else "meta-llama/Llama-3.1-8B-Instruct"
        planned = current.gpu.key if current and current.gpu else node_gpu
        self.gpu_key = next((key for key in (planned, node_gpu) if key in catalog.gpus), DEFAULT_GPU)

    def compose(self) -> ComposeResult:
        start = _Form.of(self.current, self.catalog)
        names = sorted(self.models)
        models = ModelList(*names, id="model-list")
        if self.model_id in names:
            models.highlighted = names.index(self.model_id)  # before mount: the first highlight is this one
        with Horizontal(id="planner"):
            with VerticalScroll(id="planner-form"):
                yield Label("model (type to search)")
                # not selected on focus: a key typed on the model list and moved here is not typed over
                yield Input(placeholder="llama-3.1-8b", id="model-search", select_on_focus=False)
                yield models
                yield Label("or a config.json / model directory / cached HF id")
                yield Input(placeholder="/models/my-model", id="config-path")
                yield Label("GPU")
                yield Select(
                    [(g.key, key) for key, g in self.catalog.gpus.items()],
                    value=self.gpu_key,
                    allow_blank=False,
                    id="gpu",
                )
                yield Label("weights / KV cache")
                yield Select(
                    [(f, f) for f in self.catalog.formats], value=start.weights, allow_blank=False, id="weights"
                )
                kv = dict.fromkeys(("auto", "fp8", "fp32", start.kv))
                yield Select([(k, k) for k in kv], value=start.kv, allow_blank=False, id="kv")
                yield Label("context tokens / users / GPUs / utilization")
                yield Input(str(start.context), id="context", type="integer")
                yield Input(str(start.users), id="users", type="integer")
                splits = sorted({1, 2, 4, 8, start.split} - {0})
                yield Select(
                    [("fewest", 0), *((str(n), n) for n in splits)], value=start.split, allow_blank=False, id="split"
                )
                yield Input(f"{start.utilization:g}", id="utilization", type="number")
            with VerticalScroll(id="planner-result"):  # scrolls where the plan is longer than the screen
                yield Static(id="launch-view")  # the command first: what the plan comes to
                yield Static(id="plan-view")
                yield Static(id="fit-view")
        yield Footer()

    def on_mount(self) -> None:
        # A plan to start from: the model list, where arrows pick another model and typing searches. None: typing
        # goes to the search field from the first key (the scrolling form would take focus otherwise). Its label
        # stays in view.
        start = "#model-list" if self.current is not None else "#model-search"
        self.query_one(start).focus(scroll_visible=False)
        self.recompute()

    def on_key(self, event: events.Key) -> None:
        """Typing on the model list searches, as its label says: each key the list consumes (every printable
        one, the screen's letters too) goes on to the search field, and typing stays there."""
        models = self.query_one("#model-list", ModelList)
        if (
            self.focused is not models
            or not event.character
            or not models.check_consume_key(event.key, event.character)
        ):
            return
        search = self.query_one("#model-search", Input)
        search.focus(scroll_visible=False)
        search.insert_text_at_cursor(event.character)
        event.stop()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "model-search":
            self._filter(event.value)
        self.recompute()

    def on_select_changed(self, _event: Select.Changed) -> None:
        self.recompute()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self.model_id = str(event.option.prompt)
        self.recompute()

    def _filter(self, text: str) -> None:
        options = self.query_one("#model-list", OptionList)
        options.clear_options()
        wanted = text.strip().lower()
        matches = [m for m, spec in sorted(self.models.items()) if any(wanted in n.lower() for n in spec.names)]
        options.add_options(matches)
        if matches and self.model_id not in matches:
            self.model_id = matches[0]
            options.highlighted = 0

    def _model(self) -> ModelSpec:
        """The model a config path describes when one is given (read offline), else the chosen one."""
        ref = self.query_one("#config-path", Input).value.strip()
        if not ref:
            return self.models[self.model_id]
        return read_model_config(ref)[0]

    def plan_input(self) -> PlanInput:
        value = lambda wid: self.query_one(f"#{wid}", Input).value  # noqa: E731
        split = self.query_one("#split", Select).value
        assert isinstance(split, int)  # the split's Select offers no blank
        return PlanInput(
            model=self._model(),
            gpu=self.catalog.gpus[str(self.query_one("#gpu", Select).value)],
            weights_format=self.catalog.formats[str(self.query_one("#weights", Select).value)],
            kv_dtype=str(self.query_one("#kv", Select).value),
            context=int(value("context")),
            users=int(value("users")),
            gpus=int(split) or None,
            utilization=float(value("utilization")),
        )

    def serving(self) -> Serving:
        """The plan `plan --engine vllm` gives for these inputs: the same path, the same split and pool."""
        return serve(self.plan_input(), ENGINE)

    def launch(self, serving: Serving) -> LaunchLine:
        """The command that launches this plan: the model as vLLM takes it (a config reference as typed)."""
        assert serving.engine is not None  # the screen plans with vLLM (ENGINE)
        ref = self.query_one("#config-path", Input).value.strip() or None
        return engine_launch(serving.engine, model_argument(serving.plan.input.model, config=ref))

    def recompute(self) -> None:
        """The plan, its launch line and the fit table for the form; where the form cannot be planned, the
        reason in their place (no input typed here may end the app)."""
        plan_view, fit_view = self.query_one("#plan-view", Static), self.query_one("#fit-view", Static)
        launch_view = self.query_one("#launch-view", Static)
        try:
            serving = self.serving()
            launch = self.launch(serving)
            cells = self._fit_cells(serving.plan.input)
        except PLAN_ERRORS as exc:
            plan_view.update(
                Text(f"Cannot plan yet: {literal(str(exc).splitlines()[0])}", style=tone(self.app, "warning"))
            )
            launch_view.update("")
            fit_view.update("")  # the table of the last model planned is not this one's
            return
        plan_view.update(_plan_view(serving, tone(self.app, "warning")))
        launch_view.update(_launch_view(launch))
        fit_view.update(_fit_table(cells))

    def _fit_cells(self, inp: PlanInput) -> list[FitCell]:
        """The fewest GPUs of each card and format for this model and load, as `fit --engine vllm` sizes it."""
        return fit_matrix(
            [inp.model],
            [self.catalog.format(f) for f in FIT_FORMATS],
            [self.catalog.gpu(g) for g in FIT_GPUS],
            users=inp.users,
            context=inp.context,
            utilization=inp.utilization,
            kv_dtype=inp.kv_dtype,
            engine=ENGINE,
        )

    def action_copy(self) -> None:
        """c or ctrl+o: the launch line to the clipboard (the terminal's, by OSC 52), and a note that says so."""
        try:
            command = self.launch(self.serving()).command
        except PLAN_ERRORS:
            self.notify("fix the inputs first", severity="warning", markup=False)
            return
        self.app.copy_to_clipboard(command)
        self.notify(f"copied: {literal(command)}", title="launch line", markup=False)

    def action_apply(self) -> None:
        try:
            serving = self.serving()
        except PLAN_ERRORS:
            self.notify("fix the inputs first", severity="warning", markup=False)
            return
        inp = serving.plan.input
        plan = ManualPlan.with_weights(
            self.catalog,
            inp.model,
            inp.weights_format.name,
            kv_cache_dtype=inp.kv_dtype,
            max_model_len=inp.context,
            users=inp.users,
            utilization=inp.utilization,
            tp=serving.gpus,
            version=ENGINE.version,
            gpu=inp.gpu,
            source="planner screen",
        )
        self.on_apply(plan)
        self.app.pop_screen()


def _plan_view(serving: Serving, warn) -> Group:
    """vLLM's bands on one GPU of the split, its verdict, and the plain method as a cross-check."""
    engine = serving.engine
    assert engine is not None
    p = engine.prediction
    assert isinstance(p, EnginePrediction)  # the screen plans with vLLM (ENGINE)
    title = f"{serving.plan.input.model.id} on {engine.tp} x {serving.plan.input.gpu.key}, vLLM {p.version}"
    table = Table(title=Text(literal(title), style="bold"), title_justify="left", box=None)
    for name in ("per GPU", "GB", "GiB"):
        table.add_column(name, justify="left" if name == "per GPU" else "right")
    rows = [
        ("weights", p.weights_bytes),
        ("non-torch", p.non_torch_bytes),
        ("activation peak", p.activation_peak_bytes),
        ("CUDA graphs", p.cudagraph_bytes),
        ("KV cache", p.kv_cache_bytes),
        ("requested (x utilization)", p.requested_memory_bytes),
        ("total (as CUDA reports it)", p.total_gpu_memory_bytes),
    ]
    for name, value in rows:
        table.add_row(name, f"{value / GB:,.1f}", f"{value / GIB:,.1f}")
    verdict = Text(literal(serving_verdict(serving)), style="bold")
    lines: list[RenderableType] = [table, verdict, Text(literal(cross_check(serving)))]
    lines += [Text(f"! {literal(w)}", style=warn) for w in [*p.failures, *p.warnings, *serving.warnings]]
    lines += [Text(f"~ {literal(note)}") for note in p.assumed]
    lines += [Text(f"+ {literal(line)}") for line in p.term_lines()]
    return Group(*lines)


def _launch_view(launch: LaunchLine) -> Group:
    """The command under its label (ctrl+o copies it in every field; the footer shows c where it acts too),
    then what it alone does not do."""
    lines: list[RenderableType] = [Text("launch (ctrl+o copies it)", style="bold"), Text(literal(launch.command))]
    lines += [Text(f"~ {literal(note)}") for note in launch.notes]
    return Group(*lines, Text(""))


@dataclass(frozen=True)
class _Form:
    """The form's first values: the plan's where one is handed, else the defaults."""

    weights: str
    kv: str
    context: int
    users: int
    split: int
    utilization: float

    @classmethod
    def of(cls, plan: ManualPlan | None, catalog: Catalog) -> _Form:
        if plan is None:
            return cls("bf16", "auto", 8192, 8, 0, 0.9)
        weights = format_of(plan.quantization, plan.model)
        return cls(
            weights if weights in catalog.formats else "bf16",
            plan.kv_cache_dtype,
            plan.max_model_len or plan.model.max_context or 8192,
            plan.users,
            plan.tp or 0,
            plan.utilization,
        )


def _fit_table(cells) -> Table:
    title = Text("fewest GPUs for this load by vLLM (* under 5 % of the KV pool spare)")
    table = Table(title=title, title_justify="left", box=None)
    table.add_column("weights")
    gpus = list(dict.fromkeys(c.gpu for c in cells))
    for gpu in gpus:
        table.add_column(gpu, justify="right")
    for fmt in dict.fromkeys(c.weights_format for c in cells):
        row = [c for c in cells if c.weights_format == fmt]
        table.add_row(fmt, *("-" if c.gpus is None else f"{c.gpus}{'*' if c.amber else ''}" for c in row))
    return table

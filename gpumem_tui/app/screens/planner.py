"""PlannerScreen: pick a model, GPU, formats and load; the plan and the fit table recompute as you type."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, OptionList, Select, Static

from gpumem_tui.app.tone import tone
from gpumem_tui.catalog import Catalog, CatalogError, ModelSpec
from gpumem_tui.catalog.hfconfig import find_config, load_config, model_from_config, model_id_for
from gpumem_tui.overlays import ManualPlan
from gpumem_tui.planner.budget import make_plan
from gpumem_tui.planner.fit import fit_matrix
from gpumem_tui.planner.records import PlanInput
from gpumem_tui.planner.report import verdict
from gpumem_tui.planner.vllm.loaded import FORMAT_TO_QUANTIZATION
from gpumem_tui.text import literal
from gpumem_tui.units import GB, GIB

FIT_GPUS = ["rtx4090", "l40s", "a100", "h100", "h200", "b200"]
FIT_FORMATS = ["bf16", "fp8", "int4"]


class PlannerScreen(Screen):
    """Attributes down: the catalog and the current plan come in; ctrl+s sends the chosen plan up."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "back"),
        Binding("ctrl+s", "apply", "apply to overlay", priority=True),
    ]

    def __init__(self, catalog: Catalog, on_apply, current: ManualPlan | None = None):
        super().__init__()
        self.catalog, self.on_apply, self.current = catalog, on_apply, current
        self.model_id = current.model.id if current else "meta-llama/Llama-3.1-8B-Instruct"

    def compose(self) -> ComposeResult:
        with Horizontal(id="planner"):
            with VerticalScroll(id="planner-form"):
                yield Label("model (type to search)")
                yield Input(placeholder="llama-3.1-8b", id="model-search")
                yield OptionList(*sorted(self.catalog.models), id="model-list")
                yield Label("or a config.json / model directory / cached HF id")
                yield Input(placeholder="/models/my-model", id="config-path")
                yield Label("GPU")
                yield Select(
                    [(g.key, key) for key, g in self.catalog.gpus.items()],
                    value="H100-SXM-80GB",
                    allow_blank=False,
                    id="gpu",
                )
                yield Label("weights / KV cache")
                yield Select([(f, f) for f in self.catalog.formats], value="bf16", allow_blank=False, id="weights")
                yield Select([(k, k) for k in ("auto", "fp8", "fp32")], value="auto", allow_blank=False, id="kv")
                yield Label("context tokens / users / GPUs / utilization")
                yield Input("8192", id="context", type="integer")
                yield Input("8", id="users", type="integer")
                yield Select(
                    [("fewest", 0), ("1", 1), ("2", 2), ("4", 4), ("8", 8)], value=0, allow_blank=False, id="split"
                )
                yield Input("0.9", id="utilization", type="number")
            with Vertical(id="planner-result"):
                yield Static(id="plan-view")
                yield Static(id="fit-view")
        yield Footer()

    def on_mount(self) -> None:
        self.recompute()

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
        matches = [
            m
            for m, spec in sorted(self.catalog.models.items())
            if wanted in m.lower() or any(wanted in a for a in spec.aliases)
        ]
        options.add_options(matches)
        if matches and self.model_id not in matches:
            self.model_id = matches[0]
            options.highlighted = 0

    def _model(self) -> ModelSpec:
        """The model a config path describes when one is given (read offline), else the chosen one."""
        ref = self.query_one("#config-path", Input).value.strip()
        if not ref:
            return self.catalog.models[self.model_id]
        path = find_config(ref)
        config = load_config(path)
        return model_from_config(config, model_id_for(path, config))[0]

    def plan_input(self) -> PlanInput:
        value = lambda wid: self.query_one(f"#{wid}", Input).value  # noqa: E731
        split = self.query_one("#split", Select).value
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

    def recompute(self) -> None:
        plan_view, fit_view = self.query_one("#plan-view", Static), self.query_one("#fit-view", Static)
        try:
            inp = self.plan_input()
        except (ValueError, KeyError, CatalogError) as exc:
            plan_view.update(
                Text(f"Cannot plan yet: {literal(str(exc).splitlines()[0])}", style=tone(self.app, "warning"))
            )
            return
        plan = make_plan(inp)
        plan_view.update(_plan_table(plan, tone(self.app, "warning")))
        cells = fit_matrix(
            [inp.model],
            [self.catalog.format(f) for f in FIT_FORMATS],
            [self.catalog.gpu(g) for g in FIT_GPUS],
            users=inp.users,
            context=inp.context,
            utilization=inp.utilization,
        )
        fit_view.update(_fit_table(cells))

    def action_apply(self) -> None:
        try:
            inp = self.plan_input()
        except (ValueError, KeyError, CatalogError):
            self.notify("fix the inputs first", severity="warning", markup=False)
            return
        plan = ManualPlan(
            model=inp.model,
            quantization=FORMAT_TO_QUANTIZATION.get(inp.weights_format.name),
            kv_cache_dtype=inp.kv_dtype,
            max_model_len=inp.context,
            users=inp.users,
            utilization=inp.utilization,
            tp=inp.gpus,
        )
        self.on_apply(plan)
        self.app.pop_screen()


def _plan_table(plan, warn) -> Group:
    table = Table(title=Text(literal(plan.input.model.id), style="bold"), title_justify="left", box=None)
    for name in ("per GPU", "GB", "GiB"):
        table.add_column(name, justify="left" if name == "per GPU" else "right")
    for band in plan.per_gpu.bands:
        table.add_row(band.name.replace("_", " "), f"{band.bytes / GB:,.1f}", f"{band.bytes / GIB:,.1f}")
    lines = [table, Text(verdict(plan), style="bold")]
    lines += [Text(f"! {literal(w)}", style=warn) for w in plan.warnings]
    return Group(*lines)


def _fit_table(cells) -> Table:
    table = Table(title=Text("fewest GPUs for this load (* under 5 % spare)"), title_justify="left", box=None)
    table.add_column("weights")
    gpus = list(dict.fromkeys(c.gpu for c in cells))
    for gpu in gpus:
        table.add_column(gpu, justify="right")
    for fmt in dict.fromkeys(c.weights_format for c in cells):
        row = [c for c in cells if c.weights_format == fmt]
        table.add_row(fmt, *("-" if c.gpus is None else f"{c.gpus}{'*' if c.amber else ''}" for c in row))
    return table

"""ProcessTable: every GPU process with its owner, memory on the GPU and the host; sortable with `s`."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from gpumem_tui.models import ProcessRecord
from gpumem_tui.text import literal
from gpumem_tui.units import Unit, fmt

COLUMNS = ("pid", "user", "GPU", "GPU memory", "host RSS", "CPU", "engine", "name", "command")
WITH_POD = (*COLUMNS[:-2], "pod", *COLUMNS[-2:])
"""The columns once some process runs in a Kubernetes pod: its `namespace/name` before the process name, as
on such a node the pod is what tells processes apart (every engine is `VLLM::EngineCore`)."""
SORTS = ("GPU memory", "pid", "GPU", "host RSS", "user")


class ProcessTable(DataTable):
    """Outside text (names, command lines) is shown literally: cells are Text, never markup. Enter on a row
    opens its sheet; `k` (the node screen's) stops it."""

    BINDINGS = [Binding("enter", "select_cursor", "details")]

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        self.shown_columns: tuple[str, ...] = COLUMNS
        for name in COLUMNS:
            self.add_column(name, key=name)
        self.sort_by = SORTS[0]
        self._shown: tuple | None = None
        """What `show` last drew from: the processes, engine pids, unit and order."""

    def current(self) -> tuple[int, int] | None:
        """(pid, GPU index) of the row under the cursor; None on an empty table."""
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value or ""
        pid, gpu = (int(part) for part in key.split(":"))
        return pid, gpu

    def next_sort(self) -> str:
        self.sort_by = SORTS[(SORTS.index(self.sort_by) + 1) % len(SORTS)]
        return self.sort_by

    def show(self, processes: list[ProcessRecord], engine_pids: set[int], unit: Unit) -> None:
        """Rows as the strings shown; cells are rewritten in place while the same processes stay, so a
        refresh that changes a few numbers does not rebuild (and lay out) the table."""
        shown = (processes, engine_pids, unit, self.sort_by)
        if shown == self._shown:  # the same processes, unit and order: every cell is as drawn
            return
        self._shown = shown
        columns = WITH_POD if any(p.pod for p in processes) else COLUMNS
        if columns != self.shown_columns:
            self.clear(columns=True)
            for name in columns:
                self.add_column(name, key=name)
            self.shown_columns = columns
        pods = columns == WITH_POD
        ordered = sorted(processes, key=self._key)
        rows = {f"{p.pid}:{p.gpu_index}": _cells(p, engine_pids, unit, pods) for p in ordered}
        if list(rows) == [key.value for key in self.rows]:
            for row_key, cells in rows.items():
                for column, cell in zip(columns, cells, strict=True):
                    if self.get_cell(row_key, column) != cell:
                        # a wider value (`6 %` becoming `100 %`) widens its column; columns never shrink
                        wider = cell.cell_len > self.columns[ColumnKey(column)].content_width
                        self.update_cell(row_key, column, cell, update_width=wider)
            return
        keep = self.cursor_row
        self.clear()
        for row_key, cells in rows.items():
            self.add_row(*cells, key=row_key)
        if self.row_count:
            self.move_cursor(row=min(keep, self.row_count - 1))

    def _key(self, p: ProcessRecord):
        return {
            "GPU memory": -(p.gpu_memory_bytes or 0),
            "pid": p.pid,
            "GPU": (p.gpu_index, p.gpu_instance_id or 0, p.compute_instance_id or 0, p.pid),
            "host RSS": -(p.host_rss_bytes or 0),
            "user": (p.user or "", p.pid),
        }[self.sort_by]


def _cells(p: ProcessRecord, engine_pids: set[int], unit: Unit, pods: bool = False) -> tuple[Text, ...]:
    pod = (Text(literal(p.pod, "")[:64]),) if pods else ()
    return (
        Text(str(p.pid)),
        Text(literal(p.user, "?")),
        Text(p.device),
        Text(fmt(p.gpu_memory_bytes, unit)),
        Text(fmt(p.host_rss_bytes, unit)),
        Text("-" if p.cpu_percent is None else f"{p.cpu_percent:.0f} %"),
        Text("yes" if p.pid in engine_pids else ""),
        *pod,
        Text(literal(p.name, "")[:32]),
        Text(literal(p.command)[:200]),
    )

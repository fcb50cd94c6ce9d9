"""The human form of one sample, in the spirit of nvidia-smi: a table per GPU, then one per process."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Console
from rich.table import Table

from gpumem_tui.cli.output import table
from gpumem_tui.diagnosis.engine_values import questioned
from gpumem_tui.models import GpuRecord, HostRecord, MigInstance, ProcessRecord, Sample
from gpumem_tui.text import literal, short_bus_id
from gpumem_tui.units import MIB, fmt_auto, gib

MIN_COMMAND_WIDTH = 20
NAME_WIDTH, USER_WIDTH = 32, 16
"""Process names and users come from outside: a long one is cut here so the columns after it stay on screen."""
TEXT_COLUMNS = (4, 5)
"""Name and user: with the command (the last column), the columns that are cut to fit; the numbers stay whole."""
POD_WIDTH, POD_MIN_WIDTH, POD_FLOOR_WIDTH = 40, 20, 9
"""A pod's `namespace/name` (outside text) is cut at POD_WIDTH when shown; on a narrow screen it gives way to
POD_MIN_WIDTH before the user does, and to POD_FLOOR_WIDTH (`team-a...`) before a number is cut."""
_KIND = {"compute": "C", "graphics": "G", "compute+graphics": "C+G", "mps": "M"}
"""nvidia-smi's process types: an MPS client is M (its server, nvidia-cuda-mps-server, is C)."""


def mib(n_bytes: int | None) -> str:
    return "-" if n_bytes is None else f"{n_bytes / MIB:,.0f} MiB"


def _host_gib(n_bytes: int | None) -> str:
    return "-" if n_bytes is None else gib(n_bytes, digits=1)


def _or_dash(value: object, unit: str = "") -> str:
    return "-" if value is None else f"{value:g}{unit}" if isinstance(value, float) else f"{value}{unit}"


def render(sample: Sample, console: Console, where: str) -> None:
    when = datetime.fromtimestamp(sample.timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    driver = f"  driver {literal(sample.driver_version)}" if sample.driver_version else ""
    console.print(f"{literal(sample.hostname)}  {when}  {literal(where)}{driver}", soft_wrap=True)
    console.print()
    console.print(_gpu_table(sample, console.width))
    console.print()
    if sample.processes:
        console.print(_process_table(sample.processes, console.width))
    else:
        console.print("No processes on any GPU.")
    if sample.host is not None:
        console.print()
        console.print(_host_line(sample.host))
    for status in sample.engines:
        console.print(
            f"engine {literal(status.url)}: {literal(status.state)}"
            + (f" ({literal(status.error)})" if status.error else "")
        )
        for record in status.records:
            usage = "-" if record.kv_usage_fraction is None else f"{record.kv_usage_fraction:.0%}"
            pool = "-" if record.kv_pool_tokens is None else f"{record.kv_pool_tokens:,} tokens"
            console.print(
                f"  {literal(record.model)}: KV cache {usage} of {pool}, running {_or_dash(record.requests_running)},"
                f" waiting {_or_dash(record.requests_waiting)}"
            )
            # what the engine says that cannot be true is said so, in the words check uses (engine_values)
            for line in [*questioned(record), *(f"note: {note}" for note in record.notes)]:
                console.print(f"    {literal(line)}")
    for error in sample.errors:
        console.print(
            f"{literal(error.source)}: {literal(error.message)}" + (f" ({literal(error.hint)})" if error.hint else "")
        )


def _gpu_table(sample: Sample, width: int) -> Table:
    """Sizes stay whole, each with its unit; a name (from the driver or a recording) is cut, and on a narrow
    screen it gives way, never a number. The bus id beside NVML's index says which card it is, as nvidia-smi's
    Bus-Id does (NVML's order is not CUDA's); where the numbers would not fit beside it (80 columns), it
    gives way before them."""
    headers = ["GPU", "Bus-Id", "Name", "Used", "Total", "Use", "Free", "Reserved", "Util", "Temp", "Power"]
    rows = [row for gpu in sample.gpus for row in _gpu_rows(gpu)]
    for row in rows:
        row[2] = _cut(row[2], NAME_WIDTH)
    widths = [max(len(cell) for cell in [headers[i], *(row[i] for row in rows)]) for i in range(len(headers))]
    if sum(widths) - widths[2] + 2 * (len(headers) - 1) > width:
        headers, rows = headers[:1] + headers[2:], [row[:1] + row[2:] for row in rows]
    name = headers.index("Name")
    out = table(None, headers, rows, right=set(range(name + 1, len(headers))))
    for i, column in enumerate(out.columns):
        column.no_wrap = i != name
        column.overflow = "ellipsis"
    return out


def _gpu_rows(gpu: GpuRecord) -> list[list[str]]:
    bus_id = short_bus_id(gpu.bus_id) or "-"
    if gpu.lost:
        return [[str(gpu.index), bus_id, literal(gpu.name), "LOST", "-", "-", "-", "-", "-", "-", "-"]]
    if not gpu.accessible:
        return [[str(gpu.index), bus_id, literal(gpu.name), "not accessible", "-", "-", "-", "-", "-", "-", "-"]]
    share = (
        "-"
        if not gpu.memory_total_bytes or gpu.memory_used_bytes is None
        else f"{100 * gpu.memory_used_bytes / gpu.memory_total_bytes:.0f} %"
    )
    power = (
        "-"
        if gpu.power_w is None
        else (
            f"{gpu.power_w:.0f} / {gpu.power_limit_w:.0f} W"
            if gpu.power_limit_w is not None
            else f"{gpu.power_w:.0f} W"
        )
    )
    rows = [
        [
            str(gpu.index),
            bus_id,
            literal(gpu.name),
            mib(gpu.memory_used_bytes),
            mib(gpu.memory_total_bytes),
            share,
            mib(gpu.memory_free_bytes),
            mib(gpu.memory_reserved_bytes),
            utilization(gpu),
            _or_dash(gpu.temperature_c, " C"),
            power,
        ]
    ]
    for mig in gpu.mig_instances:
        rows.append(
            [
                f"{gpu.index}:{'?' if mig.gpu_instance_id is None else mig.gpu_instance_id}",
                "",
                mig_name(gpu, mig),
                mib(mig.memory_used_bytes),
                mib(mig.memory_total_bytes),
                "",
                mib(mig.memory_free_bytes),
                "",
                "",
                "",
                "",
            ]
        )
    return rows


def utilization(gpu: GpuRecord) -> str:
    """NVML has no utilization for a card in MIG mode: said so, not a blank to wonder about."""
    if gpu.utilization_gpu_percent is None and gpu.mig_enabled:
        return "n/a (MIG)"
    return _or_dash(gpu.utilization_gpu_percent, " %")


def mig_name(gpu: GpuRecord, mig: MigInstance) -> str:
    """`MIG 40gb`, the card's own name left out; a GPU instance split into compute instances names them
    (`MIG 40gb, CI 0+1`): they share its memory, shown once on its row."""
    name = literal(mig.name, "MIG")
    if gpu.name and name.startswith(literal(gpu.name) + " "):
        name = name[len(literal(gpu.name)) + 1 :]
    if len(mig.compute_instance_ids) > 1:
        name += ", CI " + "+".join(str(ci) for ci in mig.compute_instance_ids)
    return name


def _process_table(processes: list[ProcessRecord], width: int) -> Table:
    """The numbers whole (pid, GPU, type, memory, RSS, CPU); names and users (each cut at a width of its
    own) and the command share what is left of the screen's width and are cut there, never the numbers.
    A Pod column (cut at POD_WIDTH) comes before the command when some process runs in a Kubernetes pod."""
    headers = ["PID", "GPU", "Type", "GPU memory", "Name", "User", "Host RSS", "CPU", "Command"]
    rows = [_process_row(p) for p in processes]
    at = None  # the Pod column, when there is one
    if any(p.pod for p in processes):
        at = 8
        headers.insert(at, "Pod")
        for row, process in zip(rows, processes, strict=True):
            row.insert(at, literal(process.pod) if process.pod else "-")
    last = len(headers) - 1
    text = {*TEXT_COLUMNS, last, *([] if at is None else [at])}
    widths = [max(len(cell) for cell in [headers[i], *(row[i] for row in rows)]) for i in range(len(headers))]
    free = width - sum(w for i, w in enumerate(widths) if i not in text) - 2 * (len(headers) - 1)
    name, user = min(widths[4], NAME_WIDTH), min(widths[5], USER_WIDTH)
    pod = 0 if at is None else min(widths[at], POD_WIDTH)
    short = MIN_COMMAND_WIDTH - (free - name - user - pod)
    if short > 0:  # a narrow screen: names, pods and users give way before the command goes under its minimum
        name -= min(short, max(0, name - len(headers[4]) - 4))
        short = MIN_COMMAND_WIDTH - (free - name - user - pod)
        if at is not None:  # the pod tells processes apart on a Kubernetes node: it keeps its namespace longest
            pod -= min(max(short, 0), max(0, pod - POD_MIN_WIDTH))
            short = MIN_COMMAND_WIDTH - (free - name - user - pod)
        user -= min(max(short, 0), max(0, user - len(headers[5])))
    over = name + user + pod + len(headers[last]) - free
    if over > 0 and at is not None:  # still too wide: the pod down to its namespace's start, then the name
        cut = min(over, max(0, pod - POD_FLOOR_WIDTH))
        pod, over = pod - cut, over - cut
        name -= min(max(over, 0), max(0, name - len(headers[4])))
    room = max(len(headers[last]), free - name - user - pod)
    for row in rows:
        row[4], row[5], row[last] = _cut(row[4], name), _cut(row[5], user), _cut(row[last], room)
        if at is not None:
            row[at] = _cut(row[at], pod)
    out = table(None, headers, rows, right={0, 3, 6, 7})
    for column in out.columns:
        column.no_wrap = True
    return out


def _cut(text: str, room: int) -> str:
    return text if len(text) <= room else text[: room - 3] + "..."


def _process_row(process: ProcessRecord) -> list[str]:
    name = literal(process.name) if process.visible is not False else literal(process.note)
    command = _command(process.cmdline)
    return [
        str(process.pid),
        process.device,
        _KIND[process.kind],
        mib(process.gpu_memory_bytes),
        name,
        literal(process.user),
        fmt_auto(process.host_rss_bytes) if process.host_rss_bytes is not None else "-",
        _or_dash(None if process.cpu_percent is None else round(process.cpu_percent), " %"),
        command,
    ]


def _command(cmdline: list[str] | None) -> str:
    """The command line with the directories of the program (and of the script it runs) left out;
    the table cuts it at the screen's edge, the JSON keeps it whole."""
    if not cmdline:
        return "-"
    head = [arg.rsplit("/", 1)[-1] or arg if arg.startswith("/") else arg for arg in cmdline[:2]]
    return literal(" ".join([*head, *cmdline[2:]]))


def _host_line(host: HostRecord) -> str:
    used, total = _host_gib(host.memory_used_bytes), _host_gib(host.memory_total_bytes)
    swap = f"swap {_host_gib(host.swap_used_bytes)} / {_host_gib(host.swap_total_bytes)}"
    cpu = "-" if host.cpu_percent is None else f"{host.cpu_percent:.0f} %"
    cores = "" if host.cpu_count is None else f" of {host.cpu_count} cores"
    return f"Host: RAM {used} / {total}, {swap}, CPU {cpu}{cores}"

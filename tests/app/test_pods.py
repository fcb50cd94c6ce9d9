"""The TUI on a Kubernetes node: the process table gains a pod column, whose outside text is shown
literally; a node without pods keeps its columns (issue 14)."""

from __future__ import annotations

from gpumem_tui.app.widgets.process_table import COLUMNS, WITH_POD, ProcessTable
from gpumem_tui.demo.scenario import scenario_dir
from tests.app.conftest import settle
from tests.app.screen_text import screen_text


def _cells(app) -> list[list[str]]:
    table = app.screen.query_one(ProcessTable)
    return [[str(cell) for cell in table.get_row_at(row)] for row in range(table.row_count)]


async def test_the_process_table_names_each_pod_literally(make_app, tmp_path):
    text = (scenario_dir() / "k8s-two-pods.toml").read_text()
    hostile = tmp_path / "hostile-pods.toml"
    hostile.write_text(text.replace('name = "vllm-chat-7d9f8c6b5-x2k4q"', 'name = "[red]x"'))
    app = make_app(str(hostile), 60)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one(ProcessTable)
        assert tuple(str(c.label) for c in table.columns.values()) == WITH_POD
        pod = WITH_POD.index("pod")
        assert [row[pod] for row in _cells(app)] == ["team-a/[red]x", "team-b/vllm-code-5c4b7d9f6-m8n2p"]
        assert app.is_running


async def test_a_node_without_pods_keeps_its_columns(make_app):
    app = make_app("healthy-8b", 300)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one(ProcessTable)
        assert tuple(str(c.label) for c in table.columns.values()) == COLUMNS


async def test_inside_a_container_the_engine_is_drawn_on_its_gpu(make_app):
    app = make_app("container-view", 60)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(app, pilot)
        shown = "\n".join(screen_text(app))
        assert [plan.gpu_indices for plan in app.node.judged.plans] == [[1]]
        assert app.node.judged.engine_pids == {1, 812345}
    assert "PID namespaces differ" in shown


async def test_inside_a_container_the_screen_says_pid_namespaces_differ_once(make_app):
    """The placement note (for snapshot, which lists no findings) and the finding say the same thing: the TUI
    lists the finding and leaves the note out of its status line."""
    app = make_app("container-view", 60)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(app, pilot)
        shown = "\n".join(screen_text(app))
    assert shown.count("PID namespaces differ") == 1
    assert "host: PID namespaces differ" not in shown


async def test_at_80_columns_each_processs_pod_is_told_apart(make_app):
    """On a Kubernetes node every engine is `VLLM::EngineCore`: the pod is what tells the rows apart, so it
    comes before the name and is read at 80 columns (the table scrolls sideways for the rest)."""
    app = make_app("k8s-two-pods", 60)
    async with app.run_test(size=(80, 70)) as pilot:
        await settle(app, pilot)
        rows = [line for line in screen_text(app) if line.startswith(("  2100 ", "  2200 "))]
    assert any("team-a/vllm-chat" in line for line in rows), rows
    assert any("team-b/vllm-code" in line for line in rows), rows

"""After an engine exits, the app explains why from the minutes it keeps in memory: the explanation stays on
the main screen, `f` shows the forensics of those minutes, and `check --replay` on the app's own recording
of the same minutes says the same words."""

from __future__ import annotations

import json

from gpumem_tui.app.screens.forensics import ForensicsScreen
from gpumem_tui.app.widgets.findings_panel import FindingsPanel
from gpumem_tui.cli import main
from tests.app.conftest import run_to, settle, text_of


def _exit_finding(findings):
    [finding] = [f for f in findings if f.code == "engine_exited"]
    return finding


async def test_the_cause_of_the_exit_stays_on_screen_and_check_replay_says_the_same(make_app, tmp_path, capsys):
    path = tmp_path / "noisy.jsonl"
    app = make_app("noisy-neighbour", at=0)
    app.node.record_path = str(path)
    async with app.run_test(size=(160, 60)) as pilot:
        await run_to(app, pilot, 330, step=10, span=330)
        live = _exit_finding(app.node.investigation.findings_in("GiB"))  # check's unit
        shown = text_of(app.screen.query_one(FindingsPanel))
        codes = {f.code for f in app.node.investigation.findings}
        await pilot.press("r")  # stop recording: the file is complete
    # the notebook's finding went with the engine; its cause is still named, with the free memory left
    # and its plain "does not answer" is folded into the explained exit: one finding for one event
    assert "foreign_process" not in codes and "engine_down" not in codes
    assert live.title.startswith("engine exited on GPU 0 (OOM?): python3 pid 3100 grew +20.00 GiB just before")
    assert "Free memory on GPU 0 fell to" in live.explanation
    assert live.severity == "critical" and live.pid == 3100 and live.gpu_index == 0
    assert "expected (planned: loading / KV pool)" in live.explanation
    # the screen says it in its own unit (GB until `g`)
    assert "engine exited on GPU 0 (OOM?): python3 pid 3100 grew +21.47 GB just before" in " ".join(shown.split())
    assert "were gone at 2026-01-01 00:0" in shown
    capsys.readouterr()
    assert main(["check", "--replay", str(path), "--json"]) == 2
    replayed = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "engine_exited"]
    assert replayed == [live.model_dump(mode="json")]


async def test_f_on_a_demo_shows_the_minutes_kept_in_memory(make_app):
    app = make_app("noisy-neighbour", at=0)
    async with app.run_test(size=(160, 60)) as pilot:
        await run_to(app, pilot, 300, step=10, span=300)
        await pilot.press("f")
        assert isinstance(app.screen, ForensicsScreen)
        await app.screen.workers.wait_for_complete()
        await pilot.pause()
        text = " ".join(text_of(app.screen.query_one("#forensics-text")).split())
        await pilot.press("f")
        await settle(app, pilot)
        assert app.screen.__class__.__name__ == "MainScreen"
    assert "Forensics of the minutes kept in memory" in text
    assert "python3 pid 3100 grew +21.47 GB just before" in text  # why the engine exited, in the sheet's unit
    # who grew before the first critical finding: the notebook first, the engine's start-up planned
    grew = text[text.index("Who grew") :]
    assert grew.index("3100") < grew.index("2100")
    assert "unexpected: not the engine's" in grew and "expected (planned: loading / KV pool)" in grew

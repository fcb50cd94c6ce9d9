"""The app judges each sample once, in its refresh worker off the UI thread; a key press only draws the
latest judgement again: it judges nothing and reads nothing from disk."""

from __future__ import annotations

import threading

from tests.app.conftest import refresh, run_to, settle
from tests.disk_reads import disk_reads

KEYS = ("g", "s", "space", "space", "plus", "minus", "s")


def count_judging(app, monkeypatch) -> list[tuple[str, bool]]:
    """(what, whether on the UI thread) for each sample added to the app's judge and each read of its
    findings; the judge's own methods run as they are, only counted."""
    calls: list[tuple[str, bool]] = []
    watch = type(app.node.investigation)
    add, findings = watch.add, watch.findings.fget

    def counted_add(self, sample):
        calls.append(("add", threading.current_thread() is threading.main_thread()))
        return add(self, sample)

    def counted_findings(self):
        calls.append(("findings", threading.current_thread() is threading.main_thread()))
        return findings(self)

    monkeypatch.setattr(watch, "add", counted_add)
    monkeypatch.setattr(watch, "findings", property(counted_findings))
    return calls


async def test_each_sample_is_judged_once_off_the_ui_thread_and_a_key_judges_nothing(make_app, monkeypatch):
    app = make_app("noisy-neighbour", at=30)
    calls = count_judging(app, monkeypatch)
    async with app.run_test(size=(160, 48)) as pilot:
        # the refresh on mount, then 30 (the same sample: not judged again), 35, ... 55
        await run_to(app, pilot, 55, step=5, span=25)
        samples = [on_ui for what, on_ui in calls if what == "add"]
        assert len(samples) == 6 and not any(samples)
        assert not any(on_ui for _what, on_ui in calls)
        judged = len(calls)
        for key in KEYS:
            await pilot.press(key)
            await pilot.pause()
        assert len(calls) == judged, calls[judged:]
        assert app.node.unit == "GiB" and not app.node.paused  # the keys did act


async def test_a_key_press_reads_nothing_from_disk(make_app):
    app = make_app("healthy-8b", at=280)
    async with app.run_test(size=(160, 48)) as pilot:
        await run_to(app, pilot, 300, step=10)
        with disk_reads() as seen:
            for key in KEYS:
                await pilot.press(key)
                await pilot.pause()
        assert seen == []


async def test_a_refresh_whose_sample_did_not_change_does_not_judge_again(make_app, monkeypatch):
    """A replay between two recorded samples, or a node whose Prometheus has not scraped again, gives the same
    sample: its judgement stands, and the history does not count it twice."""
    app = make_app("noisy-neighbour", at=30)
    calls = count_judging(app, monkeypatch)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)  # the refresh on mount
        assert [what for what, _ in calls] == ["add"] and len(app.node.history.timestamps) == 1
        first = app.node.judged
        await refresh(app, pilot)  # the clock has not moved: the same sample
        assert [what for what, _ in calls] == ["add"] and len(app.node.history.timestamps) == 1
        assert app.node.judged is first
        app.demo_clock.set(35)
        await refresh(app, pilot)
        assert [what for what, _ in calls] == ["add", "add"] and app.node.judged is not first

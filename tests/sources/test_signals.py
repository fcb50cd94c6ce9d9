"""The real signal path behind `k`: signals sent by os.kill to a real child process of ours, its end seen in
/proc (a zombie has ended), a pid that names another process since the sample left alone, and another user's
process refused unless we are root, its owner read from /proc (the real one, or a tree naming another uid)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gpumem_tui.models import ProcessRecord
from gpumem_tui.sources.host import HostSource
from gpumem_tui.sources.procfs import ProcFiles, boot_time, real_uid, stat_ended, stat_start_ticks
from gpumem_tui.sources.signals import Signaller
from tests.sources.proc_tree import write

IGNORES_SIGTERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(120)\n"
)


def _exited(child: subprocess.Popen) -> None:
    """Until the child has exited, left unreaped (a zombie, as a process whose parent is slow to wait)."""
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)


@pytest.fixture
def sleeper():
    child = subprocess.Popen(["sleep", "120"])
    yield child
    child.kill()
    child.wait()


@pytest.fixture
def stubborn():
    child = subprocess.Popen([sys.executable, "-c", IGNORES_SIGTERM], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "ready\n"  # its handler is in place
    yield child
    child.kill()
    child.wait()


def _row(pid: int, visible: bool | None = True, started: float | None = None) -> ProcessRecord:
    return ProcessRecord(pid=pid, gpu_index=0, visible=visible, started=started)


def _seen(pid: int) -> ProcessRecord:
    """The process as a sample shows it: described by the host source, its start time included."""
    info = HostSource().describe([pid])[pid]
    assert info.started is not None
    return _row(pid, started=info.started)


def test_sigterm_ends_our_own_child_and_its_end_is_seen(sleeper):
    stopper, shown = Signaller(), _seen(sleeper.pid)
    assert stopper.refusal(shown) is None  # our own process
    assert not stopper.ended(shown)
    assert stopper.send(shown, force=False) is True
    _exited(sleeper)
    assert stopper.ended(shown), "a zombie has ended: it holds no memory"
    sleeper.wait()
    assert stopper.ended(shown)
    assert stopper.send(shown, force=False) is False  # already gone: nothing sent


def test_a_pid_taken_by_another_process_since_is_not_signalled(sleeper):
    """The sample showed a process that started a while before the one its pid names now."""
    shown = _seen(sleeper.pid)
    before = shown.model_copy(update={"started": (shown.started or 0) - 600})
    stopper = Signaller()
    assert stopper.ended(before)  # the process shown is gone
    assert stopper.send(before, force=True) is False
    assert sleeper.poll() is None  # the one holding its pid now was not touched
    assert stopper.send(_row(sleeper.pid), force=False) is True  # without a start time, the pid is all
    sleeper.wait()


def test_a_process_that_ignores_sigterm_is_still_there_and_sigkill_ends_it(stubborn):
    stopper, shown = Signaller(), _seen(stubborn.pid)
    assert stopper.send(shown, force=False) is True
    assert not stopper.ended(shown)  # an ignored signal is dropped as it is sent
    assert stubborn.poll() is None
    assert stopper.send(shown, force=True) is True
    _exited(stubborn)
    assert stopper.ended(shown)
    stubborn.wait()
    assert stubborn.returncode == -9


def test_another_users_process_is_refused_unless_we_are_root(sleeper):
    """The child runs as us. Seen by a user who is not its owner (uid 4242 here), it is another user's."""
    owner = os.geteuid()
    refused = Signaller(me=lambda: 4242).refusal(_row(sleeper.pid))
    assert refused is not None and f"pid {sleeper.pid} belongs to" in refused
    assert "only root may stop another user's process" in refused
    assert Signaller(me=lambda: owner).refusal(_row(sleeper.pid)) is None
    assert Signaller(me=lambda: 0).refusal(_row(sleeper.pid)) is None
    assert sleeper.poll() is None  # a refusal sends nothing


def test_the_owner_is_read_from_proc_one_layer_down(tmp_path):
    write(tmp_path, 777, "status", "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t0\t0\t0\t0\n")
    proc = ProcFiles(tmp_path)
    assert proc.owner(777) == 0
    refused = Signaller(proc, me=lambda: 1000).refusal(_row(777))
    assert refused is not None and "belongs to root" in refused and "run gpumem-tui as root" in refused
    assert Signaller(proc, me=lambda: 0).refusal(_row(777)) is None
    assert proc.owner(778) is None  # unreadable: the kernel decides when the signal is sent


def test_a_pid_not_visible_here_and_our_own_are_refused():
    stopper = Signaller()
    refused = stopper.refusal(_row(4242, visible=False))
    assert refused is not None and "another PID namespace" in refused
    assert "this gpumem-tui" in (stopper.refusal(_row(os.getpid())) or "")


def test_the_proc_parsers():
    assert real_uid("Name:\tx\nUid:\t1000\t1000\t1000\t1000\nGid:\t1\n") == 1000
    assert real_uid("Name:\tx\n") is None and real_uid(None) is None
    assert not stat_ended("4242 (a) b) S 1 4242")  # the state follows the last parenthesis
    assert stat_ended("4242 (python3) Z 1 4242") and stat_ended(None) and stat_ended("garbage")
    stat = "4242 (py (3)) S " + " ".join(str(n) for n in range(4, 22)) + " 987654 0 0"
    assert stat_start_ticks(stat) == 987654 and stat_start_ticks("4242 (x) S 1") is None
    assert boot_time("cpu  1 2 3\nbtime 1767225600\nprocesses 9\n") == 1767225600.0 and boot_time("") is None

"""`check` on a pipe writes its lines without rich (cli/check_text.py): the text rich writes there, byte for byte;
rich still writes what it would lay out (a line it wraps, FORCE_COLOR)."""

from __future__ import annotations

import io

import pytest

from gpumem_tui.catalog import load_catalog
from gpumem_tui.cli import check_view
from gpumem_tui.cli.check_sources import from_demo
from gpumem_tui.cli.check_text import PIPE_WIDTH, STYLING, on_pipe, styled_pipe
from gpumem_tui.cli.output import TrimmedLines
from gpumem_tui.diagnosis.findings import Thresholds


def _as_rich_writes_it(checked) -> str:
    from rich.console import Console

    piped = io.StringIO()
    out = Console(file=TrimmedLines(piped), markup=False, emoji=False, highlight=False, width=PIPE_WIDTH)
    out.file.write(check_view.rendered(checked, out))
    out.file.flush()
    return piped.getvalue()


def _piped(monkeypatch) -> None:
    """stdout a pipe, whatever runs the tests, and no variable that makes rich style a pipe."""
    monkeypatch.setattr("sys.stdout", io.StringIO())
    for name in STYLING:
        monkeypatch.delenv(name, raising=False)


def _checked(scenario: str, at: float | None = None):
    return from_demo(scenario, at, None, load_catalog(), None, Thresholds())


@pytest.mark.parametrize(
    ("scenario", "at"),
    [
        ("noisy-neighbour", 48.0),
        ("busy-node", None),
        ("gpu-lost", None),
        ("wrong-precision", 300.0),
        ("idle-node", 5.0),
    ],
)
def test_the_lines_on_a_pipe_are_what_rich_writes_there(scenario, at, monkeypatch):
    _piped(monkeypatch)
    checked = _checked(scenario, at)
    assert on_pipe(checked) == _as_rich_writes_it(checked)


def test_rich_writes_a_line_it_would_wrap_and_a_pipe_it_would_style(monkeypatch):
    _piped(monkeypatch)
    checked = _checked("busy-node")
    assert on_pipe(checked) is not None
    many = [gpu.model_copy(update={"index": k}) for k in range(16) for gpu in checked.sample.gpus[:1]]
    wide = type(checked)(**{**vars(checked), "sample": checked.sample.model_copy(update={"gpus": many})})
    assert on_pipe(wide) is None, "16 cards' bus ids are wider than a pipe: rich wraps them"
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert on_pipe(checked) is None


VALUES = (None, "", "0", "1", "yes")


@pytest.mark.parametrize("compatible", VALUES)
@pytest.mark.parametrize("force", VALUES)
def test_a_pipe_is_styled_exactly_where_rich_styles_it(force, compatible):
    """A CI runner may set FORCE_COLOR empty: rich then writes a pipe plain, and so does check without rich."""
    from rich.console import Console

    environ = {name: value for name, value in zip(STYLING, (force, compatible), strict=True) if value is not None}
    assert styled_pipe(environ) == Console(file=io.StringIO(), _environ=environ).is_terminal

"""Record samples to JSON Lines and play them back at any speed.

The first line is a header naming the format and its version; each further line is one Sample. Every
line is flushed as it is written, so a crash loses at most the sample being written; such a cut-off
last line is skipped with a warning when the file is read back.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpumem_tui import __version__
from gpumem_tui.models import Sample

FORMAT_NAME = "gpumem-tui-recording"
FORMAT_VERSION = 1


class RecordingError(ValueError):
    """A file that is not a recording this version can read: the file and the reason."""


def _header() -> dict[str, Any]:
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "created": time.time(),
        "writer": f"gpumem-tui {__version__}",
    }


def _check_header(path: Path, line: str) -> dict[str, Any]:
    try:
        header = json.loads(line)
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise RecordingError(f"{path}: not a gpumem-tui recording (the first line is not its header)")
    if header.get("version") != FORMAT_VERSION:
        raise RecordingError(
            f"{path}: recording format version {header.get('version')!r}; this gpumem-tui "
            f"reads version {FORMAT_VERSION} (use the gpumem-tui that wrote it)"
        )
    return header


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"


class Recorder:
    """Appends samples to a recording, writing the header first when the file is new."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        exists = self.path.is_file() and self.path.stat().st_size > 0
        try:
            if exists:
                with self.path.open(encoding="utf-8", errors="replace") as handle:
                    _check_header(self.path, handle.readline())
            self._file = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            raise RecordingError(f"{self.path}: cannot record here ({exc.strerror})") from None
        if not exists:
            self._line(json.dumps(_header()))
        elif not _ends_with_newline(self.path):
            self._line("")  # seal a line cut off by a crash, so the next sample starts on its own line

    def _line(self, text: str) -> None:
        self._file.write(text + "\n")
        self._file.flush()

    def write(self, sample: Sample) -> None:
        self._line(sample.model_dump_json())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RecordingReader:
    """Reads a recording lazily; lines that are not samples are skipped and noted in `warnings`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.warnings: list[str] = []
        try:
            with self.path.open(encoding="utf-8", errors="replace") as handle:
                self.header = _check_header(self.path, handle.readline())
        except OSError as exc:
            raise RecordingError(f"{self.path}: cannot read ({exc.strerror})") from None

    def __iter__(self) -> Iterator[Sample]:
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            handle.readline()
            for number, line in enumerate(handle, start=2):
                if not line.strip():
                    continue
                try:
                    yield Sample.model_validate_json(line)
                except ValidationError:
                    self.warnings.append(
                        f"{self.path}: line {number} was cut off mid-write (a crash while recording); skipped"
                        if not line.endswith("\n")
                        else f"{self.path}: line {number} is not a sample; skipped"
                    )


class ReplaySource:
    """Plays a recording: each call returns the newest sample at or before the replay position.

    The position is `start_at` seconds into the recording plus the clock's elapsed time times `speed`.
    """

    def __init__(
        self,
        path: str | Path,
        clock: Callable[[], float] = time.monotonic,
        speed: float = 1.0,
        start_at: float = 0.0,
    ):
        if speed <= 0:
            raise RecordingError("replay speed must be above 0")
        self.reader = RecordingReader(path)
        self._samples = iter(self.reader)
        first = next(self._samples, None)
        if first is None:
            raise RecordingError(f"{self.reader.path}: the recording holds no samples")
        self._current, self._next = first, next(self._samples, None)
        self._first_timestamp = first.timestamp
        self._clock, self._speed, self._start_at = clock, speed, start_at
        self._origin = clock()

    @property
    def warnings(self) -> list[str]:
        return self.reader.warnings

    @property
    def position(self) -> float:
        """Seconds into the recording."""
        return self._start_at + (self._clock() - self._origin) * self._speed

    @property
    def finished(self) -> bool:
        return self._next is None

    def offset(self, sample: Sample) -> float:
        return sample.timestamp - self._first_timestamp

    def sample(self) -> Sample:
        position = self.position
        while self._next is not None and self.offset(self._next) <= position:
            self._current, self._next = self._next, next(self._samples, None)
        return self._current

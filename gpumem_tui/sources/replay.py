"""Record samples to JSON Lines and play them back at any speed.

The first line is a header naming the format and its version; each further line is one Sample. Every
line is flushed as it is written, so a crash loses at most the sample being written; such a cut-off
last line is skipped with a warning when the file is read back. Samples appended later continue the
recording when they carry on from it (same host and source, later in time: a snapshot every minute
from cron is one recording); anything else starts a new session with a header line of its own, and a
reader reads the last session unless told which, so two incidents are never played as one.
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
HEADER_START = '{"format": "gpumem-tui-recording"'


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
    """Appends samples to a recording; a new file, or samples that do not carry on from the file's last
    one, get a header line first (a new session)."""

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
        self._last = _last_sample(self.path) if exists else None
        self._opened = not exists
        if exists and not _ends_with_newline(self.path):
            self._line("")  # seal a line cut off by a crash, so the next sample starts on its own line
        if not exists:
            self._line(json.dumps(_header()))

    def _line(self, text: str) -> None:
        self._file.write(text + "\n")
        self._file.flush()

    def write(self, sample: Sample) -> None:
        if not self._opened:
            last = self._last
            if last is None or (sample.hostname, sample.source) != (last.hostname, last.source) or (
                    sample.timestamp < last.timestamp):
                self._line(json.dumps(_header()))
            self._opened = True
        self._line(sample.model_dump_json())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RecordingReader:
    """Reads one session of a recording lazily (the last, unless `session` names one, counting from 1);
    lines that are not samples are skipped and noted in `warnings`."""

    def __init__(self, path: str | Path, session: int | None = None):
        self.path = Path(path)
        self.warnings: list[str] = []
        try:
            with self.path.open("rb") as handle:
                self.header = _check_header(self.path, handle.readline().decode("utf-8", errors="replace"))
                starts = [(0, 1)] + _session_starts(handle)
        except OSError as exc:
            raise RecordingError(f"{self.path}: cannot read ({exc.strerror})") from None
        self.sessions = len(starts)
        chosen = self.sessions if session is None else session
        if not 1 <= chosen <= self.sessions:
            raise RecordingError(f"{self.path}: holds {self.sessions} session(s); there is no session {session}")
        if session is None and self.sessions > 1:
            self.warnings.append(f"{self.path}: holds {self.sessions} recording sessions; reading the last")
        self._offset, self._first_line = starts[chosen - 1]

    def __iter__(self) -> Iterator[Sample]:
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            handle.seek(self._offset)
            handle.readline()
            for number, line in enumerate(handle, start=self._first_line + 1):
                if not line.strip():
                    continue
                if line.startswith(HEADER_START):
                    return  # the next session begins
                try:
                    yield Sample.model_validate_json(line)
                except ValidationError:
                    self.warnings.append(
                        f"{self.path}: line {number} was cut off mid-write (a crash while recording); skipped"
                        if not line.endswith("\n")
                        else f"{self.path}: line {number} is not a sample; skipped"
                    )


def _last_sample(path: Path) -> Sample | None:
    """The file's last whole sample, read from its tail."""
    with path.open("rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - 4 * 2**20))
        lines = handle.read().splitlines()
    for raw in reversed(lines):
        try:
            return Sample.model_validate_json(raw)
        except ValidationError:
            continue
    return None


def _session_starts(handle) -> list[tuple[int, int]]:
    """(byte offset, line number) of every header line after the first: where later sessions begin."""
    starts, number, offset = [], 1, handle.tell()
    for raw in handle:
        number += 1
        if raw.startswith(HEADER_START.encode()):
            starts.append((offset, number))
        offset += len(raw)
    return starts


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

"""Record samples to JSON Lines and play them back at any speed.

A header line names the format and its version, then one Sample a line, each flushed as it is written. A
recording is outside input: a line that is no sample is skipped and noted, and a failed write is a
`RecordingError` in words. A URL in a line is read as `text.shown_url` shows it: recordings made before that
rule may hold a user and password. The format, its sessions and its lock: docs/recording-format.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from gpumem_tui import __version__
from gpumem_tui.models import LATEST_TIMESTAMP, Sample
from gpumem_tui.records import Record
from gpumem_tui.text import shown_urls

FORMAT_NAME = "gpumem-tui-recording"
FORMAT_VERSION = 1
HEADER_START = '{"format": "gpumem-tui-recording"'
MAX_LINE_BYTES = 16 * 2**20
"""A sample of a node with thousands of processes is well under 1 MiB; a longer line is not read."""
MAX_WARNINGS = 20
"""Lines skipped are named one by one up to here, then counted."""


class RecordingError(ValueError):
    """A file that is not a recording this version can read: the file and the reason."""


class Signalled(Record):
    """A line of a recording that is no sample: a signal the node screen sent (`k`) and what followed. A
    reader from before events skips it with a warning, as any line that is not a sample."""

    event: Literal["signal"]
    timestamp: float = Field(ge=0, le=LATEST_TIMESTAMP, allow_inf_nan=False)
    pid: int
    signal: Literal["SIGTERM", "SIGKILL"]
    outcome: Literal["ended", "running", "gone", "failed"]
    """The process ended; was still running when the screen stopped waiting; was gone before the signal; or
    the system refused the signal."""
    said: str
    """What the screen said of it."""


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


def _first_line(handle) -> str:
    """The header line, read no further than a header can be long."""
    return handle.readline(4096).decode("utf-8", errors="replace")


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"


class Recorder:
    """Appends samples to a recording; a new file, or samples that do not carry on from the file's last
    one, get a header line first (a new session). It holds an exclusive lock on the file while open: a
    second recorder on the same file is refused, so two nodes are never interleaved in one session."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._events: list[Signalled] = []
        """Events said before this session's first sample: written after it, in the session they belong to."""
        try:
            self._file = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            raise RecordingError(f"{self.path}: cannot record here ({exc.strerror})") from None
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._file.close()
            raise RecordingError(f"{self.path}: another gpumem-tui is recording to this file") from None
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        exists = self.path.is_file() and self.path.stat().st_size > 0
        if exists:
            with self.path.open("rb") as handle:
                _check_header(self.path, _first_line(handle))
        self._last = _last_sample(self.path) if exists else None
        self._opened = not exists
        if exists and not _ends_with_newline(self.path):
            self._line("")  # seal a line cut off by a crash, so the next sample starts on its own line
        if not exists:
            self._line(json.dumps(_header()))

    def _line(self, text: str) -> None:
        try:
            self._file.write(text + "\n")
            self._file.flush()
        except OSError as exc:
            raise RecordingError(f"{self.path}: cannot write ({exc.strerror or exc})") from None

    def write(self, sample: Sample) -> None:
        if not self._opened:
            last = self._last
            if (
                last is None
                or (sample.hostname, sample.source) != (last.hostname, last.source)
                or (sample.timestamp < last.timestamp)
            ):
                self._line(json.dumps(_header()))
            self._opened = True
        self._line(sample.model_dump_json())
        for event in self._events:
            self._line(event.model_dump_json())
        self._events = []

    def note(self, event: Signalled) -> None:
        """An event, in the session of the samples around it."""
        if self._opened:
            self._line(event.model_dump_json())
        else:
            self._events.append(event)

    def close(self) -> None:
        """Release the file; what a failed write left unwritten is dropped (the failure was raised then)."""
        with contextlib.suppress(OSError):
            self._file.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RecordingReader:
    """Reads one session of a recording lazily (the last, unless `session` names one, counting from 1);
    lines that are not samples are skipped and noted in `warnings` (the first MAX_WARNINGS, then a count)."""

    def __init__(self, path: str | Path, session: int | None = None):
        self.path = Path(path)
        self.warnings: list[str] = []
        self.events: list[Signalled] = []
        """The events read so far, in order (they come as the samples around them are read)."""
        self._unsaid = 0
        try:
            with self.path.open("rb") as handle:
                _check_header(self.path, _first_line(handle))
                starts = [(0, 1)] + _session_starts(handle, handle.tell())
                self.sessions = len(starts)
                chosen = self.sessions if session is None else session
                if not 1 <= chosen <= self.sessions:
                    raise RecordingError(
                        f"{self.path}: holds {self.sessions} session(s); there is no session {session}"
                    )
                self._offset, self._first_line = starts[chosen - 1]
                handle.seek(self._offset)
                self.header = _check_header(self.path, _first_line(handle))  # each session's own version
        except OSError as exc:
            raise RecordingError(f"{self.path}: cannot read ({exc.strerror})") from None
        if session is None and self.sessions > 1:
            self.warnings.append(f"{self.path}: holds {self.sessions} recording sessions; reading the last")

    def __iter__(self) -> Iterator[Sample]:
        with self.path.open("rb") as handle:
            handle.seek(self._offset)
            _first_line(handle)
            for number, (raw, _size) in enumerate(_lines(handle), start=self._first_line + 1):
                if raw is None:
                    self._skip(f"line {number} is over {MAX_LINE_BYTES // 2**20} MiB")
                    continue
                if raw.startswith(HEADER_START.encode()):
                    break  # the next session begins
                line = shown_urls(raw.decode("utf-8", errors="replace"))  # the file is read, never rewritten
                if not line.strip():
                    continue
                try:
                    yield Sample.model_validate_json(line)
                except ValidationError as exc:
                    if self._event(line):
                        continue
                    self._skip(
                        f"line {number} was cut off mid-write (a crash while recording)"
                        if not line.endswith("\n")
                        else f"line {number} is not a sample ({_reason(exc)})"
                    )
        if self._unsaid:
            self.warnings.append(f"{self.path}: {self._unsaid} more line(s) that are not samples skipped")
            self._unsaid = 0

    def _event(self, line: str) -> bool:
        """Whether the line is an event (kept in `events`)."""
        try:
            self.events.append(Signalled.model_validate_json(line))
        except ValidationError:
            return False
        return True

    def _skip(self, why: str) -> None:
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(f"{self.path}: {why}; skipped")
        else:
            self._unsaid += 1


def _reason(exc: ValidationError) -> str:
    """The first thing wrong with a line, in pydantic's words: `timestamp: Input should be a finite number`."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]


def _lines(handle) -> Iterator[tuple[bytes | None, int]]:
    """Each line of a binary file and its length in bytes; a line over MAX_LINE_BYTES comes as None,
    passed over in pieces so that it is never held whole."""
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        if len(raw) <= MAX_LINE_BYTES:
            yield raw, len(raw)
            continue
        size = len(raw)
        while raw and not raw.endswith(b"\n"):
            raw = handle.readline(2**20)
            size += len(raw)
        yield None, size


def _last_sample(path: Path) -> Sample | None:
    """The file's last whole sample, read from its tail."""
    with path.open("rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - 4 * 2**20))
        lines = handle.read().splitlines()
    for raw in reversed(lines):
        try:
            return Sample.model_validate_json(shown_urls(raw.decode("utf-8", errors="replace")))
        except ValidationError:
            continue
    return None


def _session_starts(handle, offset: int) -> list[tuple[int, int]]:
    """(byte offset, line number) of every header line after the first (which ends at `offset`): where
    later sessions begin."""
    starts, number = [], 1
    for raw, size in _lines(handle):
        number += 1
        if raw is not None and raw.startswith(HEADER_START.encode()):
            starts.append((offset, number))
        offset += size
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
        self.first_timestamp = first.timestamp
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

    @property
    def shown_position(self) -> tuple[float, bool]:
        """(seconds into the recording, whether that is its end): never past the last sample, which the
        position passes once the recording has run out (the file holds no more to show)."""
        position = self.position
        if self._next is not None:
            return position, False
        end = self.offset(self._current)
        return min(position, end), position >= end

    def offset(self, sample: Sample) -> float:
        return sample.timestamp - self.first_timestamp

    def sample(self) -> Sample:
        position = self.position
        while self._next is not None and self.offset(self._next) <= position:
            self._current, self._next = self._next, next(self._samples, None)
        return self._current

"""History stays bounded: fixed-size series, and processes forgotten once they fall out of the window."""

from gpumem_tui.diagnosis.history import History
from gpumem_tui.models import GpuRecord, ProcessRecord, Sample


def _sample(t: float, pids: list[int]) -> Sample:
    return Sample(
        timestamp=t,
        hostname="n",
        source="test",
        gpus=[GpuRecord(index=0, memory_used_bytes=int(t))],
        processes=[ProcessRecord(pid=pid, gpu_index=0, gpu_memory_bytes=pid) for pid in pids],
    )


def test_series_are_bounded_and_gone_processes_are_forgotten():
    history = History(points=10)
    for t in range(100):
        history.add(_sample(float(t), [1, 1000 + t]))  # one process stays, a new one each second
    assert len(history.gpu_points[0]) == 10 and len(history.gpu(0)) == 10
    assert set(history.process_points) == {(0, 1)} | {(0, 1000 + t) for t in range(90, 100)}
    assert history.gpu_since(0, 95.0) == [(float(t), t) for t in range(95, 100)]
    assert history.process_since(0, 1, 98.0) == [(98.0, 1), (99.0, 1)]


def test_series_keep_a_window_of_time_and_a_hard_cap():
    by_time = History(points=1000, window_s=10.0)
    capped = History(points=5, window_s=1000.0)
    for t in range(100):
        by_time.add(_sample(float(t), [1, 1000 + t]))
        capped.add(_sample(float(t), [1]))
    assert list(by_time.timestamps) == [float(t) for t in range(89, 100)]
    assert [t for t, _ in by_time.gpu_points[0]] == [float(t) for t in range(89, 100)]
    assert len(by_time.process_points[(0, 1)]) == 11 and (0, 1000 + 80) not in by_time.process_points
    assert len(capped.gpu(0)) == 5 and len(capped.process_points[(0, 1)]) == 5
    assert by_time.first_timestamp == 89.0

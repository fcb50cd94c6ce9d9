"""Hostile engine endpoints on 127.0.0.1: real sockets that hang, trickle, fail, flood, cut off or list
thousands of models, one behaviour per path (`/metrics`, `/v1/models`).

Each `FaultServer` counts the connections open now, the most open at once and all it accepted, so a
test sees whether a client leaks connections; a thread per connection, stopped by `stop()`.
"""

from __future__ import annotations

import asyncio
import json
import select
import socket
import threading
from typing import Literal

from gpumem_tui.demo.engine_exposition import exposition
from gpumem_tui.demo.engine_state import EngineState

Behaviour = Literal["ok", "hang", "trickle", "http_500", "huge", "huge_declared", "cut", "many_models", "many_metrics"]

MANY_MODELS = 6_000
HUGE_BYTES = 64 * 2**20
TICK_S = 0.02
"""How often a waiting handler looks at its socket and the stop flag."""

HEALTHY = EngineState(
    id="llama",
    engine="vllm",
    model="meta-llama/Llama-3.1-8B-Instruct",
    port=8000,
    pids=[4242],
    gpus=[0],
    phase="ready",
    format="bf16",
    tensor_parallel_size=1,
    gpu_memory_utilization=0.9,
    max_model_len=8192,
    max_num_seqs=256,
    block_size=16,
    cache_dtype="auto",
    weights_bytes_per_gpu=16_060_522_496,
    num_gpu_blocks=29750,
    kv_pool_tokens=29750 * 16,
    kv_usage_fraction=0.42,
    requests_running=12,
    requests_waiting=3,
    preemptions_total=7,
)


def many_models_metrics(count: int = MANY_MODELS) -> bytes:
    """A vLLM V1 payload naming `count` models (one KV gauge each): the size that froze the screen."""
    lines = ["# HELP vllm:kv_cache_usage_perc KV-cache usage.", "# TYPE vllm:kv_cache_usage_perc gauge"]
    lines += [f'vllm:kv_cache_usage_perc{{engine="0",model_name="org/model-{i:05d}"}} 0.5' for i in range(count)]
    return ("\n".join(lines) + "\n").encode()


def many_models_list(count: int = MANY_MODELS) -> bytes:
    return models_list([f"org/model-{i:05d}" for i in range(count)])


def models_list(ids: list[str]) -> bytes:
    """An OpenAI-style `/v1/models` answer, as vLLM writes it."""
    data = [{"id": name, "object": "model", "max_model_len": 4096} for name in ids]
    return json.dumps({"object": "list", "data": data}).encode()


class FaultServer:
    """`FaultServer(metrics="trickle", models="hang")`: an engine whose /metrics trickles and /v1/models hangs."""

    def __init__(
        self,
        metrics: Behaviour = "ok",
        models: Behaviour = "ok",
        *,
        trickle_s: float = 0.2,
        models_count: int = MANY_MODELS,
    ) -> None:
        self.behaviours = {"/metrics": metrics, "/v1/models": models}
        self.trickle_s, self.models_count = trickle_s, models_count
        self.open_now = self.peak = self.accepted = self.flooded = 0
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(TICK_S)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._accept, name="fault-server", daemon=True)

    def start(self) -> FaultServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self._sock.close()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.open_now += 1
                self.accepted += 1
                self.peak = max(self.peak, self.open_now)
            threading.Thread(target=self._serve, args=(conn,), name="fault-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            while not self._stop.is_set():
                path = _read_request(conn, self._stop)
                if path is None:
                    return
                with self._lock:
                    self.paths.append(path)
                if not self._answer(conn, path):
                    return
        except OSError:
            return
        finally:
            conn.close()
            with self._lock:
                self.open_now -= 1

    def _answer(self, conn: socket.socket, path: str) -> bool:
        """Act out one answer; False when the connection is done."""
        behaviour = self.behaviours.get(path, "http_404")
        if behaviour == "ok":
            _send(conn, 200, models_list([HEALTHY.model]) if path == "/v1/models" else exposition("vllm-v1", [HEALTHY]))
        elif behaviour == "many_models":
            _send(conn, 200, many_models_list(self.models_count))
        elif behaviour == "many_metrics":
            _send(conn, 200, many_models_metrics(self.models_count))
        elif behaviour == "http_500":
            _send(conn, 500, b"Internal Server Error\n")
        elif behaviour == "http_404":
            _send(conn, 404, b"not found\n")
        elif behaviour == "hang":
            _wait_closed(conn, self._stop, forever=True)
            return False
        elif behaviour == "trickle":
            self._trickle(conn)
            return False
        elif behaviour in ("huge", "huge_declared"):
            self._flood(conn, declared=behaviour == "huge_declared")
            return False
        elif behaviour == "cut":
            body = exposition("vllm-v1", [HEALTHY])
            conn.sendall(_head(200, len(body) * 2) + body)
            return False
        return True

    def _trickle(self, conn: socket.socket) -> None:
        """A valid head promising a large body, then one byte every `trickle_s` until the client hangs up."""
        body = exposition("vllm-v1", [HEALTHY])
        conn.sendall(_head(200, 1_000_000))
        sent = 0
        while not _wait_closed(conn, self._stop, seconds=self.trickle_s):
            conn.sendall(body[sent % len(body) :][:1])
            sent += 1

    def _flood(self, conn: socket.socket, declared: bool) -> None:
        """64 MiB of filler, declared in Content-Length or streamed in chunks with no length; `flooded`
        counts the bytes the client took before it hung up."""
        chunk = b"x" * 65536
        conn.sendall(_head(200, HUGE_BYTES if declared else None))
        for _ in range(HUGE_BYTES // len(chunk)):
            if self._stop.is_set():
                return
            conn.sendall(chunk if declared else b"%x\r\n%s\r\n" % (len(chunk), chunk))
            with self._lock:
                self.flooded += len(chunk)


async def closed(*servers: FaultServer, within_s: float = 2.0) -> bool:
    """True once no server sees a connection open (a server notices a hang-up within a few ticks)."""
    for _ in range(int(within_s / TICK_S)):
        if all(server.open_now == 0 for server in servers):
            return True
        await asyncio.sleep(TICK_S)
    return False


def _head(status: int, length: int | None) -> bytes:
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}", "Content-Type: text/plain; version=0.0.4"]
    lines.append(f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _send(conn: socket.socket, status: int, body: bytes) -> None:
    conn.sendall(_head(status, len(body)) + body)


def _read_request(conn: socket.socket, stop: threading.Event) -> str | None:
    """The path of the next request on this connection; None when the client hung up or the server stops."""
    data = b""
    while b"\r\n\r\n" not in data:
        readable, _, _ = select.select([conn], [], [], TICK_S)
        if stop.is_set():
            return None
        if readable:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
    words = data.split(b"\r\n", 1)[0].split()
    return words[1].decode("latin-1").split("?")[0] if len(words) > 1 else "/"


def _wait_closed(conn: socket.socket, stop: threading.Event, seconds: float = 0.0, forever: bool = False) -> bool:
    """True once the client has hung up (or the server stops); waits `seconds`, or until then when `forever`."""
    waited = 0.0
    while forever or waited < seconds:
        if stop.is_set():
            return True
        readable, _, _ = select.select([conn], [], [], TICK_S)
        if readable and not conn.recv(65536):
            return True
        waited += TICK_S
    return False

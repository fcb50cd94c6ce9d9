"""Work for the screen done in a daemon thread of its own, awaited from the app's loop.

`asyncio.to_thread` runs in the loop's default executor, and `asyncio.run` (so Textual's `App.run`) waits for
that executor's threads on the way out: a read that hangs on a slow Prometheus (up to its timeouts) or the
demo's history (seconds of simulation) kept `q` from ending the app until it finished. A daemon thread is
left behind when the app ends."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def off_thread(work: Callable[[], T], name: str = "gpumem-tui work") -> T:
    """`work()` in a daemon thread; its result or its exception here."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, failed: BaseException | None) -> None:
        if done.done():  # cancelled meanwhile: the app is ending, nobody waits for it
            return
        if failed is not None:
            done.set_exception(failed)
        else:
            done.set_result(result)  # type: ignore[arg-type]  # work()'s own: None only where T is

    def run() -> None:
        result: T | None = None
        failed: BaseException | None = None
        try:
            result = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine, raised there
            failed = exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: the app ended while this ran
            loop.call_soon_threadsafe(settle, result, failed)

    threading.Thread(target=run, name=name, daemon=True).start()
    return await done

"""State kept per model name stays bounded: an engine that reports a fresh name on every poll (a hostile
or a misconfigured one) must not make the app's memory grow for as long as it runs."""

from __future__ import annotations

import sys

from gpumem_tui.demo.engine_server import MockEngineServer
from gpumem_tui.engine_records import EngineRecord
from gpumem_tui.sources.engines.endpoints import endpoint
from gpumem_tui.sources.engines.rates import PreemptionRates
from gpumem_tui.sources.engines.scraper import Scraper


def record(model: str, total: float) -> EngineRecord:
    return EngineRecord(engine="vllm", model=model, engine_index="0", preemptions_total=total)


def test_rates_remember_only_the_models_of_the_latest_payload() -> None:
    rates = PreemptionRates()
    for poll in range(1000):
        rates.apply([record("steady", poll), record(f"fresh-{poll}", 1.0)], now=float(poll))
    assert len(rates) == 2


def test_a_steady_model_keeps_its_rate_among_fresh_names() -> None:
    rates = PreemptionRates()
    rates.apply([record("steady", 10), record("a", 1)], now=0.0)
    out = rates.apply([record("steady", 12), record("b", 1)], now=60.0)
    assert out[0].preemptions_per_min == 2.0 and out[1].preemptions_per_min is None


def test_a_reading_missing_once_still_gives_a_rate_next_time() -> None:
    rates = PreemptionRates()
    rates.apply([record("m", 10)], now=0.0)
    rates.apply([record("m", None)], now=30.0)  # type: ignore[arg-type]
    assert rates.apply([record("m", 13)], now=60.0)[0].preemptions_per_min == 3.0


def _payload(poll: int) -> str:
    name = f"org/model-{poll:06d}-" + "x" * 40
    return (
        f'vllm:num_preemptions_total{{model_name="{name}",engine="0"}} {poll}\n'
        f'vllm:kv_cache_usage_perc{{model_name="{name}",engine="0"}} 0.5\n'
    )


async def test_scraping_fresh_names_does_not_grow_the_scraper() -> None:
    """What the scraper keeps between polls (everything reachable from it but its HTTP client) is the same
    size after 10 polls and after 60 more, each naming a new model."""
    server = MockEngineServer([]).start()
    try:
        async with Scraper([endpoint(server.url)]) as scraper:
            sizes = []
            for poll in range(70):
                server.set_fault("raw", _payload(poll))
                [status] = await scraper.scrape()
                assert status.state == "ok", status.error
                if poll in (9, 69):
                    sizes.append(_kept_bytes(scraper))
    finally:
        server.stop()
    assert status.records[0].model.startswith("org/model-000069")
    assert sizes[1] - sizes[0] < 200  # a few bytes of number formatting at most; a name alone is ~60


def _kept_bytes(scraper: Scraper) -> int:
    """Bytes of the objects reachable from the scraper's own attributes, its HTTP client excluded."""
    seen: set[int] = set()
    todo = [value for value in vars(scraper).values() if not type(value).__module__.startswith("httpx")]
    total = 0
    while todo:
        item = todo.pop()
        if id(item) in seen or isinstance(item, type) or callable(item) and not hasattr(item, "__dict__"):
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            todo += [*item.keys(), *item.values()]
        elif isinstance(item, (list, tuple, set, frozenset)):
            todo += list(item)
        elif hasattr(item, "__dict__") and not type(item).__module__.startswith("httpx"):
            todo += list(vars(item).values())
    return total

"""Generated command lines through the real discovery and the live feed: discovery never raises, probes
only loopback and this node's own addresses, names every process it skips in a few bounded notes,
and a sample always arrives with its GPUs."""

from __future__ import annotations

import asyncio
import ipaddress
from urllib.parse import urlsplit

from hypothesis import given
from hypothesis import strategies as st

from gpumem_tui.demo import ManualClock, demo_collector
from gpumem_tui.sources.engines.discovery import LOOPBACK_NAMES, MAX_ENDPOINTS, MAX_NOTES, survey
from gpumem_tui.sources.feed import LiveFeed

THIS_NODE = frozenset({"10.1.2.3", "fd00::2", "gpu-node-7"})

ENGINES = st.sampled_from(
    [
        ["vllm", "serve"],
        ["/usr/local/bin/vllm", "serve", "org/model"],
        ["python3", "-m", "vllm.entrypoints.openai.api_server"],
        ["python3", "-m", "sglang.launch_server"],
        ["sglang", "serve"],
        ["llama-server"],
        ["text-generation-launcher"],
    ]
)
FLAGS = st.sampled_from(["--port", "--host", "--hostname", "--metrics", "--model", "-m", "serve"])
VALUES = st.sampled_from(
    [
        "8000",
        "99999",
        "0",
        "-1",
        "65536",
        "0x1f90",
        "1e3",
        "٨٠٠٠",
        "",
        " ",
        "::1",
        "[::1]",
        "[::1",
        "0.0.0.0",
        "::",
        "localhost",
        "LOCALHOST",
        "10.1.2.3",
        "10.9.9.9",
        "169.254.169.254",
        "fe80::1%eth0",
        "gpu-node-7",
        "evil.example",
        "a b",
        "http://x/",
        "\x1b[2J",
        "\x9b31m",
        "[red]x[/red]",
        "%00",
        "x" * 300,
    ]
)
WORD = st.one_of(
    FLAGS,
    VALUES,
    st.text(max_size=12),
    st.integers(-10, 10**6).map(str),
    FLAGS.flatmap(lambda flag: VALUES.map(lambda value: f"{flag}={value}")),
)
ARGV = st.tuples(ENGINES, st.lists(WORD, max_size=8)).map(lambda parts: parts[0] + parts[1])
CMDLINE = st.one_of(ARGV, ARGV.map(" ".join), st.text(max_size=40), st.none())
PROCESS = st.one_of(
    st.tuples(st.integers(0, 2**22), CMDLINE),
    st.tuples(st.integers(0, 2**22), CMDLINE, st.one_of(st.none(), st.integers(0, 2**22))),
    st.tuples(st.text(max_size=4), CMDLINE),  # not a pid
)
PROCESSES = st.lists(PROCESS, max_size=12)


def on_this_node(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host.lower() in LOOPBACK_NAMES or host.lower() in {name.lower() for name in THIS_NODE}
    return address.is_loopback or str(address) in THIS_NODE


@given(PROCESSES)
def test_discovery_skips_with_a_note_and_never_probes_elsewhere(processes):
    found = survey(processes, THIS_NODE)
    assert len(found.endpoints) <= MAX_ENDPOINTS and len(found.notes) <= MAX_NOTES + 1
    for point in found.endpoints:
        parts = urlsplit(point.url)
        assert parts.scheme == "http" and 0 < parts.port < 65536
        assert on_this_node(parts.hostname), point.url
    assert all(isinstance(note, str) and note for note in found.notes)


COLLECTOR, _ = demo_collector("healthy-8b", clock=ManualClock(100))


@given(PROCESSES)
def test_a_live_sample_always_arrives_whatever_the_command_lines(processes):
    async def one():
        feed = LiveFeed(COLLECTOR, lambda: processes, [], engine_wait_s=0.0, addresses=lambda: THIS_NODE)
        try:
            return await feed.sample()
        finally:
            await feed.aclose()

    sample = asyncio.run(one())
    assert len(sample.gpus) == 1
    assert len([e for e in sample.errors if e.source == "discovery"]) <= MAX_NOTES + 1

"""`gpumem-tui fleet rules`: a recording-rule group Prometheus accepts, and the overview reads the series it
records when the server has them (rules backfilled with `promtool tsdb create-blocks-from rules` over the
test fleet), judging as the full read of the raw series does."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from gpumem_tui.cli import main
from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient
from gpumem_tui.sources.prometheus.queries import Queries, parse_selector
from gpumem_tui.sources.prometheus.reader import FleetReader
from tests.sources.prometheus.conftest import AT, recorded_blocks
from tests.sources.prometheus.server import require_prometheus, running

pytestmark = pytest.mark.prometheus


@pytest.mark.parametrize("selector", [[], ["--selector", '{cluster="prod", job=~"dcgm.*"}']])
def test_the_rules_pass_promtool(tmp_path, capsys, selector):
    require_prometheus()
    assert main(["fleet", "rules", *selector]) == 0
    rules = tmp_path / "rules.yml"
    rules.write_text(capsys.readouterr().out, encoding="utf-8")
    checked = subprocess.run(["promtool", "check", "rules", str(rules)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 7 rules found" in checked.stdout
    if selector:
        assert "by (cluster, job, Hostname" in rules.read_text(encoding="utf-8")


def test_a_bad_selector_is_one_line(capsys):
    assert main(["fleet", "rules", "--selector", "cluster=prod"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "expected label matchers in braces" in err[0]


NODE_A = parse_selector('{Hostname="node-a"}')


@pytest.fixture(scope="module")
def node_a_url(fleet_url, fleet_blocks, tmp_path_factory):
    """The rules of `fleet rules --selector '{Hostname="node-a"}'` recorded: node-a's figures alone."""
    with running(
        recorded_blocks(fleet_url, fleet_blocks, tmp_path_factory.mktemp("node-a"), Queries(NODE_A, look=0.1))
    ) as url:
        yield url


def _reads(url: str, queries: Queries, times: list[float]):
    reader = FleetReader(queries, FleetRules())

    async def read():
        out = []
        for at in times:
            async with PrometheusClient(Connection(url)) as client:
                out.append(await reader.read(client, at))
        return out

    return asyncio.run(read())


def _said(sample) -> list[tuple]:
    return [(f.node, f.finding.severity, f.finding.code, f.finding.title) for f in judge_fleet(sample)]


def test_the_overview_reads_the_recorded_series_and_judges_the_same(recorded_url):
    """Compared at a moment the rules were evaluated: a recorded series lags the raw ones by up to an interval."""

    async def read(promql: str, at: float):
        async with PrometheusClient(Connection(recorded_url)) as client:
            return await client.query(promql, at)

    at = asyncio.run(read("max(timestamp(gpumem:node_fb_mib:sum))", AT)).series[0].value
    assert AT - 5 < at <= AT
    first, then = _reads(recorded_url, Queries(look=0.1), [at - 5, at])
    assert first.node_figures_from == then.node_figures_from == "recording rules"

    async def full():
        async with PrometheusClient(Connection(recorded_url)) as client:
            return await FleetReader(Queries(), FleetRules()).read(client, at)

    raw = asyncio.run(full())
    assert raw.node_figures_from == "raw series"
    assert _said(then) == _said(raw)
    assert [n.model_copy(update={"low": None}) for n in then.nodes] == raw.nodes


def test_without_the_rules_the_overview_reads_the_raw_series(fleet_url):
    _, then = _reads(fleet_url, Queries(look=0.1), [AT - 5, AT])
    assert then.node_figures_from == "raw series"


def test_rules_recorded_for_a_narrower_selector_are_not_read_for_the_whole_fleet(node_a_url):
    """Rules printed with --selector record only its nodes: a reader without it would find every name and miss
    every other node's figures ("no GPU series"). It reads the raw series while a reporting node has no
    recorded figures, and the rules where they cover its selector."""
    _, wide = _reads(node_a_url, Queries(look=0.1), [AT - 5, AT])

    async def full():
        async with PrometheusClient(Connection(node_a_url)) as client:
            return await FleetReader(Queries(), FleetRules()).read(client, AT)

    raw = asyncio.run(full())
    assert wide.node_figures_from == "raw series"
    assert [n.model_copy(update={"low": None}) for n in wide.nodes] == raw.nodes
    _, narrow = _reads(node_a_url, Queries(NODE_A, look=0.1), [AT - 5, AT])
    assert narrow.node_figures_from == "recording rules" and [n.name for n in narrow.nodes] == ["node-a"]


def test_rules_recorded_at_another_fraction_are_not_read(recorded_url):
    """The count under the fraction is recorded at the threshold `fleet rules` ran with (0.1 here): a reader
    whose threshold differs finds no count at its own and reads the raw series, never the other count."""
    first, then = _reads(recorded_url, Queries(look=0.15), [AT - 5, AT])
    assert first.node_figures_from == then.node_figures_from == "raw series"
    _, same = _reads(recorded_url, Queries(look=0.1), [AT - 5, AT])
    assert same.node_figures_from == "recording rules"


def test_a_first_look_takes_the_rules_on_their_names_and_the_rest_reads_the_raw_figures(node_a_url):
    """The fleet screen's first look reads the rules' figures where the server lists all their names (here only
    node-a's are recorded, so it misses the others); the read after it finds the nodes they do not record, and
    reads the raw figures: the whole picture is the first read's (`fleet check`'s)."""
    reader = FleetReader(Queries(look=0.1), FleetRules(), first_look=True)

    async def reads():
        out = []
        for at in (AT, AT + 15):
            async with PrometheusClient(Connection(node_a_url)) as client:
                out.append(await reader.read(client, at))
        return out

    look, whole = asyncio.run(reads())
    named = {n.name for n in look.nodes}  # and node-h: its own gpumem-tui export reports it
    assert look.reading and look.node_figures_from == "recording rules" and "node-a" in named and "node-b" not in named
    assert whole.node_figures_from == "raw series" and whole == _reads(node_a_url, Queries(look=0.1), [AT])[0]

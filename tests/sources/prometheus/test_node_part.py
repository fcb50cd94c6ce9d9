"""A sample's nodes are kept whole where the refresh made them of the same answers and the engines read
the same as the nodes read them (node_part.py); anything they are made of that moves makes them again."""

from __future__ import annotations

from gpumem_tui.diagnosis.fleet.reading import FleetRules
from gpumem_tui.sources.prometheus.client import Result, Series
from gpumem_tui.sources.prometheus.node_part import NodesKept, node_counts, node_part
from gpumem_tui.sources.prometheus.records import FleetEngine

RULES = FleetRules()


def _answers(used: float = 1000.0) -> dict[str, Result]:
    fb = [("USED", used), ("FREE", 80000.0 - used), ("RESERVED", 500.0)]
    return {
        "node_memory": Result([Series({"Hostname": "node-a", "field": f}, v, 0.0) for f, v in fb[:2]]),
        "node_reserved": Result([Series({"Hostname": "node-a", "field": "RESERVED"}, 500.0, 0.0)]),
        "nodes_age": Result([Series({"Hostname": "node-a"}, 12.0, 0.0)]),
        "node_gpus": Result([Series({"Hostname": "node-a", "modelName": "H100", "field": f}, 1, 0.0) for f, _ in fb]),
    }


def _engine(node: str | None = "node-a", kv: float = 0.5) -> FleetEngine:
    return FleetEngine(model_name="m", namespace="ns", pod="p", node=node, gpus=["GPU-1"], kv_usage_fraction=kv)


TOTALS = {"H100": (81500.0, 81500.0)}
COUNTS = node_counts(_answers()["node_gpus"].series)
IDENTITIES: list = []


def _part(answers: dict[str, Result], engines: list[FleetEngine], kept: NodesKept, totals=TOTALS):
    """The node part as the reader makes it: the slow facts (the counts, the cards' totals, the join) kept."""
    looks = RULES.looks(answers, totals, IDENTITIES, 0.1)
    return node_part(answers, COUNTS, None, None, engines, looks, RULES.stale, kept), looks


def test_the_same_answers_keep_the_nodes_whole_while_the_engines_gauges_move():
    answers, kept = _answers(), NodesKept()
    first, _ = _part(answers, [_engine()], kept)
    again, looks = _part(answers, [_engine(kv=0.9)], kept)
    assert again is first
    assert first.nodes[0].engines == ["m at ns/p"] and first.nodes[0].used_bytes == 1000 * 2**20
    assert looks.needs == first.needs


def test_anything_the_nodes_read_that_moved_makes_them_again():
    answers, kept = _answers(), NodesKept()
    first, _ = _part(answers, [_engine()], kept)
    moved, _ = _part(answers, [_engine(node=None)], kept)  # the engine's join changed
    assert moved is not first and moved.nodes[0].engines == []
    equal, _ = _part(_answers(), [_engine(node=None)], kept)  # new answers that read the same
    assert equal is not moved and equal.nodes == moved.nodes
    used, _ = _part(_answers(used=2000.0), [_engine(node=None)], kept)
    assert used.nodes[0].used_bytes == 2000 * 2**20
    totals, _ = _part(_answers(used=2000.0), [_engine(node=None)], kept, {"H100": (81500.0, 80000.0)})
    assert totals is not used


def test_a_node_that_needs_a_look_is_named_again_when_its_nodes_are_kept():
    """The look names the nodes to read GPU by GPU as their records are made; a kept part says them again."""
    answers, kept = _answers(), NodesKept()
    del answers["node_reserved"]  # a figure missing: the node needs a look
    first, looks = _part(answers, [_engine()], kept)
    assert looks.needs == {"Hostname": ["node-a"]}
    again, looks = _part(answers, [_engine()], kept)
    assert again is first and looks.needs == {"Hostname": ["node-a"]}


def _least(answers: dict[str, Result], free: dict[str, float]) -> dict[str, Result]:
    """The answers with each node's least free MiB on its H100s (`node_least_free`), as new objects."""
    series = [Series({"Hostname": n, "modelName": "H100"}, v, 0.0) for n, v in free.items()]
    return {**answers, "node_least_free": Result(series)}


def test_a_later_look_takes_the_last_decisions_where_a_node_reads_the_same():
    """New answers that read the same make the nodes again, but each node's look is the last one's; a node whose
    least free memory fell under the look share is decided anew (and now needs a look)."""
    kept = NodesKept()
    _, first = _part(_least(_answers(), {"node-a": 40000.0}), [_engine()], kept)
    _, same = _part(_least(_answers(), {"node-a": 40000.0}), [_engine()], kept)
    assert same.decided["node-a"] is first.decided["node-a"] and same.needs == first.needs == {}
    assert same.planned is first.planned and same.held is first.held  # the engines read the same: their sums kept
    _, moved = _part(_least(_answers(), {"node-a": 40000.0}), [_engine(node=None)], kept)
    assert moved.planned == {} and moved.held == {}
    part, fell = _part(_least(_answers(), {"node-a": 100.0}), [_engine()], kept)
    assert fell.decided["node-a"] is not same.decided["node-a"] and fell.needs == {"Hostname": ["node-a"]}
    fresh_part, fresh = _part(_least(_answers(), {"node-a": 100.0}), [_engine()], NodesKept())
    assert fresh.needs == fell.needs and fresh_part.nodes == part.nodes


def test_where_only_the_ages_moved_the_node_sums_are_kept_and_each_node_is_its_copy():
    """The rules' memory answers kept whole (kept_recorded.py) and a new age answer: the sums are not made again,
    each node is its last record with the new age; a new memory answer makes the sums again."""
    answers, kept = _answers(), NodesKept()
    first, _ = _part(answers, [_engine()], kept)
    assert kept.sums is not None
    sums = kept.sums[2]
    aged = {**answers, "nodes_age": Result([Series({"Hostname": "node-a"}, 14.0, 0.0)])}
    again, _ = _part(aged, [_engine()], kept)
    assert again is not first and kept.sums[2] is sums
    assert again.nodes[0].data_age_s == 14.0
    assert again.nodes[0].model_dump() == first.nodes[0].model_copy(update={"data_age_s": 14.0}).model_dump()
    moved = {**aged, "node_memory": _answers(used=3000.0)["node_memory"]}
    third, _ = _part(moved, [_engine()], kept)
    assert kept.sums[2] is not sums and third.nodes[0].used_bytes == 3000 * 2**20


def _aged(answers: dict[str, Result], ages: dict[str, float]) -> dict[str, Result]:
    return {**answers, "nodes_age": Result([Series({"Hostname": n}, a, 0.0) for n, a in ages.items()])}


def test_a_part_whose_ages_alone_moved_is_the_part_made_anew():
    """Ages that move (one past the stale threshold, one back) on answers kept whole: the part is what a reader
    with nothing kept makes of the same answers (nodes, stale ones, freshest age, needs); a node that gains an
    age is made anew."""
    two = {
        **_answers(),
        "node_memory": Result(
            [
                Series({"Hostname": n, "field": f}, v, 0.0)
                for n in ("node-a", "node-b")
                for f, v in (("USED", 1e3), ("FREE", 7.9e4))
            ]
        ),
        "nodes_seen": Result([Series({"Hostname": n}, 1.0, 0.0) for n in ("node-a", "node-b", "node-c")]),
    }
    kept = NodesKept()
    _part(_aged(two, {"node-a": 12.0, "node-b": 20.0}), [_engine()], kept)
    for ages in ({"node-a": 14.0, "node-b": 20.0}, {"node-a": 900.0, "node-b": -0.0}, {"node-a": 3.0, "node-b": 0.0}):
        answers = {**_aged(two, ages), **{n: two[n] for n in two if n != "nodes_age"}}
        aged, looks = _part(answers, [_engine()], kept)
        fresh, fresh_looks = _part(answers, [_engine()], NodesKept())
        assert [n.model_dump() for n in aged.nodes] == [n.model_dump() for n in fresh.nodes]
        assert (aged.stale, aged.data_age_s, aged.needs, aged.warnings) == (
            fresh.stale,
            fresh.data_age_s,
            fresh.needs,
            fresh.warnings,
        )
        assert looks.needs == fresh_looks.needs
    gained = {**two, "nodes_age": _aged(two, {"node-a": 3.0, "node-b": 0.0, "node-c": 5.0})["nodes_age"]}
    made, _ = _part(gained, [_engine()], kept)
    assert [n.data_age_s for n in made.nodes] == [3.0, 0.0, 5.0] and "node-c" not in made.stale

"""`check` on a node of the fleet in Prometheus: its series judged as this node's are, beside what the fleet's
judge says of it."""

from __future__ import annotations

import time

from gpumem_tui.catalog import Catalog
from gpumem_tui.cli.check_sources import Checked
from gpumem_tui.cli.errors import NoSourceError
from gpumem_tui.diagnosis.autoplan import engine_plans
from gpumem_tui.diagnosis.diagnose import diagnose
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.fleet.judge import judge_fleet
from gpumem_tui.diagnosis.fleet.node import differences, judge_node
from gpumem_tui.diagnosis.fleet.plans import plan_fleet
from gpumem_tui.diagnosis.fleet.stale import stale
from gpumem_tui.diagnosis.forensics import investigate, no_samples
from gpumem_tui.diagnosis.history import History
from gpumem_tui.diagnosis.overlays import ManualPlan
from gpumem_tui.sources.prometheus.client import Connection, PrometheusClient, PrometheusError
from gpumem_tui.sources.prometheus.node_feed import read_node
from gpumem_tui.sources.prometheus.node_history import NodeHistory, history_words, read_node_history
from gpumem_tui.sources.prometheus.node_queries import NodeQueries
from gpumem_tui.sources.prometheus.node_sample import node_sample


async def from_prometheus(
    connection: Connection,
    queries: NodeQueries,
    at: float | None,
    timeout_s: float,
    catalog: Catalog,
    manual: ManualPlan | None,
    thresholds: Thresholds,
    history_s: float | None = None,
) -> Checked:
    """One node of a Prometheus (`queries`: the node, the selector's matchers, the fleet's labels), judged as
    this node is (diagnose), with what only the fleet's reading of it says (diagnosis/fleet_node.py), and where
    that differs from `fleet check`'s findings for the node. With `history_s`, the forensics of its history over
    that span (range queries), walked as the node's screen walks it on `f`; a failed range read is a warning,
    the check of the moment stands."""
    moment = time.time() if at is None else at
    node = queries.node
    past: NodeHistory | None = None
    warnings: list[str] = []
    try:
        async with PrometheusClient(connection, query_timeout_s=timeout_s) as client:
            read = await read_node(client, queries, moment, stale)
            if history_s is not None:
                try:
                    end = read.fleet.evaluated_at  # the read's moment: where the server answers behind, not now
                    past = await read_node_history(client, queries, end, history_s, stale)
                except PrometheusError as exc:
                    warnings.append(f"forensics unknown, because the range read failed: {exc}")
    except PrometheusError as exc:
        raise NoSourceError(exc.said()) from None
    sample = node_sample(read, node)
    history = History()
    history.add(sample)
    plans = engine_plans(sample, catalog, manual)
    found = judge_node(diagnose(plans, sample, history, thresholds), read.fleet, thresholds)
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(read.fleet.evaluated_at))
    where = f"node {node} in Prometheus {connection.url} at {when}"
    # `fleet check` plans each engine from the catalog: so is the fleet's side compared here
    said = differences(found, judge_fleet(plan_fleet(read.fleet, catalog), thresholds), node)
    forensics = None if past is None else investigate(past, catalog, manual, thresholds)
    if forensics is not None and past is not None:
        forensics = forensics.model_copy(update={"notes": past.warnings})
    elif past is not None:  # as the screen says it: nothing to walk, and why
        warnings.append(f"forensics: {no_samples(past.warnings)}")
    return Checked(
        sample,
        plans,
        found,
        "prometheus",
        where,
        forensics,
        [*read.fleet.warnings, *warnings],
        said,
        None if history_s is None else history_words(node, connection.url, at, history_s),
    )

"""Every broker restarted at once, gracefully: with nowhere to drain to, each broker closes
what it still serves when it stops, so the clients count as unowned until the brokers are back,
look their topics up again, and the restarted brokers own the bundles and carry the load."""

from __future__ import annotations

import tomllib

from ballast.sim.runner import RunOptions, simulate
from ballast.sim.scenario import parse_scenario
from ballast.sim.summary import summarize

SCENARIO = """
duration = "4m"
step = "15s"
[cluster]
brokers = 3
[[namespaces]]
name = "a"
topics = 8
rate = 100
[[events]]
at = "1m"
restart_brokers = "all"
"""


def test_a_whole_cluster_restart_is_counted_and_recovers() -> None:
    result = simulate(parse_scenario(tomllib.loads(SCENARIO)), RunOptions(check_invariants=True))
    summary = summarize(result)
    # Nothing is owed to the setup: the topics' clients start at t = 0.
    assert result.steps[0].unowned_topic_seconds == 0.0
    # 8 topics, each without an owner from its broker's stop to its return (at least 10 s down)
    assert summary["unownedTopicSeconds"] > 8 * 10
    down = [s for s in result.steps if s.brokers == 0]
    assert down, "no step saw the cluster down"
    last = result.steps[-1]
    assert (last.brokers, last.unowned_topics) == (3, 0)
    final = [b for b in result.brokers if b.t_s == last.t_s]
    assert sum(b.bundles for b in final) == 4  # the namespace's bundles are owned again
    assert sum(b.topics for b in final) == 8 and all(b.reported_load > 0 for b in final)
    # the steps keep their nominal times through the brokers' many short waits
    assert [s.t_s for s in result.steps] == [15.0 * k for k in range(17)]

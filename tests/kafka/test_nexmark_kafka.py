"""Nexmark over Kafka: ``jetbench nexmark --to-kafka TOPIC`` writes the generator's events to a
real broker's topic, ``--from-kafka TOPIC --query N`` runs the query over them, with the results
(count and digest) of the same query over the same events in memory; sources.kafka over several
topics and with a projection."""

from __future__ import annotations

import json

import pytest

from jetbench import Pipeline, run, sinks, sources
from jetbench.cli import main

from .helpers import produce

pytestmark = pytest.mark.kafka

EVENTS = ["--events", "4000"]


def nexmark(capsys, *args: str) -> dict:
    code = main(["nexmark", *args, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def events_topic(kafka_broker):
    """A topic holding the 4,000 events of the CLI's default configuration (100 generators)."""
    import subprocess
    import sys

    topic = "nexmark-events-4000"
    done = subprocess.run([sys.executable, "-m", "jetbench", "nexmark", "--to-kafka", topic, *EVENTS,
                           "--bootstrap-servers", kafka_broker.bootstrap_servers, "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == {"topic": topic, "events": 4000}
    return topic


@pytest.mark.parametrize("query", [1, 4, 5, 8, 9, 11])
def test_a_query_over_the_topic_equals_the_query_in_memory(capsys, bootstrap, events_topic, query):
    over_kafka = nexmark(capsys, "--from-kafka", events_topic, "--query", str(query), *EVENTS,
                         "--bootstrap-servers", bootstrap)
    in_memory = nexmark(capsys, "--query", str(query), *EVENTS)
    assert over_kafka["events"] == 4000 and over_kafka["generators"] is None
    assert (over_kafka["results"], over_kafka["digest"]) == (in_memory["results"], in_memory["digest"]), query
    assert in_memory["results"] > 0


def test_kafka_options_without_a_broker_or_with_another_mode_are_clear_errors(capsys):
    assert main(["nexmark", "--to-kafka", "t", *EVENTS]) == 2
    assert "need --bootstrap-servers" in capsys.readouterr().err
    assert main(["nexmark", "--from-kafka", "t", "--query", "1", "--runner", "spark",
                 "--bootstrap-servers", "127.0.0.1:1"]) == 2
    assert "goes with --query N on the local runner" in capsys.readouterr().err


def test_several_topics_and_a_projection(bootstrap, topic_name):
    """One source over two topics (2 and 3 partitions) reads every record of both once; the
    projection makes each item from the record's key and value."""
    first, second = topic_name("a"), topic_name("b")
    produce(bootstrap, first, [(i % 2, 1_000 + i, f"a{i}", i) for i in range(200)], partitions=2)
    produce(bootstrap, second, [(i % 3, 1_000 + i, f"b{i}", i) for i in range(300)], partitions=3)
    p = Pipeline()
    (p.read_from(sources.kafka([first, second], bootstrap, bounded=True,
                               projection=lambda key, value: f"{key.decode()}={int(value)}"))
     .set_local_parallelism(2).write_to(sinks.collect()))
    got = run(p, timeout=120, progress=False)
    assert sorted(got) == sorted([f"a{i}={i}" for i in range(200)] + [f"b{i}={i}" for i in range(300)])

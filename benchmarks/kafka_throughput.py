"""Records/s from a Kafka topic through a map, into a collect sink and into another topic, against
a plain confluent-kafka consume-produce loop on the same broker, in one process (issue 35).

    .venv/bin/python benchmarks/kafka_throughput.py [--records 200000] [--repeat 3]

Starts a local broker (`jetbench.kafka.LocalBroker`), writes ``--records`` records (about 30 bytes
each) to a 3-partition topic, then alternates, ``--repeat`` times:

* ``loop``: one Consumer ``assign()``\\s the 3 partitions, ``consume(2048)`` batches, applies the
  map, ``produce()``s each result to a new topic, ``flush()`` at the end: what a user writes by hand;
* ``jetbench->topic``: ``sources.kafka(bounded=True)`` -> ``map`` -> ``sinks.kafka`` (no guarantee);
* ``jetbench->collect``: the same into ``sinks.collect()``.

Each run reads the whole topic from the start; it prints each run's records/s, then the medians
and the ratios to the loop. The map is the same function everywhere.
"""

from __future__ import annotations

import argparse
import statistics
import time


def transform(kv):
    key, value = kv
    return value.upper()


def plain_loop(bootstrap: str, topic: str, out: str, n: int) -> float:
    from confluent_kafka import Consumer, Producer, TopicPartition

    start = time.perf_counter()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"loop-{out}", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 50})
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    seen = 0
    while seen < n:
        for m in consumer.consume(2048, 0.1):
            if m.error():
                continue
            producer.produce(out, value=transform((m.key(), m.value().decode())).encode())
            seen += 1
        producer.poll(0)
    producer.flush()
    consumer.close()
    return n / (time.perf_counter() - start)


def jetbench_run(bootstrap: str, topic: str, out: str | None, n: int) -> float:
    from jetbench import Pipeline, run, sinks, sources

    p = Pipeline()
    stage = p.read_from(sources.kafka(topic, bootstrap, value_deserializer=bytes.decode, bounded=True)).map(transform)
    stage.write_to(sinks.kafka(out, bootstrap, value_fn=lambda s: s) if out else sinks.collect())
    start = time.perf_counter()
    result = run(p, progress=False)
    seconds = time.perf_counter() - start
    if out is None:
        assert len(result) == n, len(result)
    return n / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from confluent_kafka import Producer

    from jetbench.kafka.local_broker import LocalBroker

    n = args.records
    with LocalBroker() as broker:
        bootstrap = broker.bootstrap_servers
        broker.create_topic("in", 3)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
        for i in range(n):
            producer.produce("in", value=f"record-{i:08d}-abcdefghijkl".encode(), key=str(i % 100).encode(),
                             partition=i % 3, timestamp=1_000_000 + i)
            if i % 10_000 == 0:
                producer.poll(0)
        producer.flush()
        rates: dict[str, list[float]] = {"loop": [], "jetbench->topic": [], "jetbench->collect": []}
        for r in range(args.repeat):
            for name in rates:
                out = f"out-{name.replace('>', '')}-{r}"
                if name != "jetbench->collect":
                    broker.create_topic(out, 3)
                if name == "loop":
                    rate = plain_loop(bootstrap, "in", out, n)
                else:
                    rate = jetbench_run(bootstrap, "in", out if name == "jetbench->topic" else None, n)
                rates[name].append(rate)
                print(f"run {r} {name:18} {rate:>10,.0f} records/s", flush=True)
        loop = statistics.median(rates["loop"])
        for name, values in rates.items():
            median = statistics.median(values)
            print(f"median {name:18} {median:>10,.0f} records/s   {median / loop:.2f}x the loop")


if __name__ == "__main__":
    main()

"""``jetbench nexmark``: run one Nexmark query, or Beam's SMOKE suite, and report.

    jetbench nexmark --query N [--events N] [--generators G] [--runner local|spark] [--json]
    jetbench nexmark --query N --events-file PATH      (Beam's JSON-lines events)
    jetbench nexmark --query N --rate R [--events N]   (paced on the wall clock: p50/p99 latency)
    jetbench nexmark --suite smoke [--generators G] [--runner local|spark] [--json]
    jetbench nexmark --write-events PATH [--events N] [--generators G]
    jetbench nexmark --query N --runner beam-jetbench|beam-direct   (Beam's own query code on
        jetbench's Beam runner or Beam's DirectRunner, over the events as Beam's JSON lines)

This module only declares the arguments; the work is imported when the command runs.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import NexmarkConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--query", type=int, help="the query to run (0-9, 11)")
    parser.add_argument("--suite", choices=["smoke"], help="run Beam's SMOKE suite (100,000 events a query)")
    parser.add_argument("--events", type=int, default=100_000, help="events to generate (default 100000)")
    parser.add_argument("--generators", type=int, default=100,
                        help="event generators, each on its own timeline (default 100, Beam's; 1 = one timeline)")
    parser.add_argument("--runner", choices=["local", "spark", "beam-jetbench", "beam-direct"], default="local",
                        help="local, spark, or Beam's own query code on jetbench's Beam runner (beam-jetbench) or "
                             "on Beam's DirectRunner (beam-direct)")
    parser.add_argument("--rate", type=int,
                        help="emit the events at this many per second on the wall clock and report the p99 "
                             "latency of the results (local runner)")
    parser.add_argument("--events-file", help="read the events from this JSON-lines file instead of generating them")
    parser.add_argument("--write-events", help="write the generated events to this JSON-lines file and stop")
    parser.add_argument("--to-kafka", metavar="TOPIC",
                        help="write the generated events to this Kafka topic (JSON records, Beam's format) and stop")
    parser.add_argument("--from-kafka", metavar="TOPIC",
                        help="with --query N: read the events from this Kafka topic (as --to-kafka writes them) "
                             "instead of generating them (local runner)")
    parser.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="the Kafka broker of --to-kafka/--from-kafka")
    parser.add_argument("--partitions", type=int, default=3,
                        help="partitions of the topic --to-kafka makes when the broker lacks it (default 3)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run_command(args: argparse.Namespace) -> int:
    from ..core.errors import JetbenchError
    from .config import NexmarkConfig
    from .json_events import write_events
    from .suite import (
        check_query,
        generate_timed,
        load_events,
        run_query,
        smoke,
        smoke_as_expected,
        smoke_table,
    )

    modes = sum(x is not None for x in (args.query, args.suite, args.write_events, args.to_kafka))
    if modes != 1:
        raise JetbenchError("give one of --query N, --suite smoke, --write-events PATH or --to-kafka TOPIC")
    if (args.to_kafka or args.from_kafka) and not args.bootstrap_servers:
        raise JetbenchError("--to-kafka and --from-kafka need --bootstrap-servers HOST:PORT (the broker)")
    if args.from_kafka and (args.query is None or args.runner != "local" or args.rate is not None or args.events_file):
        raise JetbenchError("--from-kafka TOPIC goes with --query N on the local runner (no --rate or --events-file)")
    if args.rate is not None and (args.query is None or args.runner != "local" or args.events_file):
        raise JetbenchError("--rate goes with --query N on the local runner, the events generated in the job")
    config = NexmarkConfig(num_events=args.events, num_event_generators=args.generators,
                           event_rate=10_000 if args.rate is None else args.rate)  # checks all three
    if args.runner.startswith("beam-"):
        return _run_beam(args, config)
    if args.rate is not None:
        from .suite import run_rated

        check_query(args.query)
        r = run_rated(args.query, config)
        if args.json:
            print(json.dumps(r.as_dict()))
        else:
            print(f"nexmark Q{r.query}: {r.results:,} results from {r.events:,} events at {r.rate:,}/s asked "
                  f"({r.events_per_s:,.0f}/s achieved, {r.generators} generator(s)), local runner")
            p50 = "-" if r.latency_p50_ms is None else f"{r.latency_p50_ms:.1f} ms"
            p99 = "-" if r.latency_p99_ms is None else f"{r.latency_p99_ms:.1f} ms"
            print(f"  result latency p50 {p50}, p99 {p99}"
                  + (f" ({r.flushed:,} results of windows still open when the input ended are left out)"
                     if r.flushed else ""))
        return 0
    if args.to_kafka or args.from_kafka:
        return _kafka(args, config)
    try:
        if args.write_events:
            pairs, _ = generate_timed(config)
            n = write_events((e for _, e in pairs), args.write_events)
            print(f"wrote {n:,} events to {args.write_events}")
            return 0
        if args.suite:
            runs = smoke(args.generators, args.runner)
            if args.json:
                print(json.dumps([r.as_dict() for r in runs]))
            else:
                print(f"Beam's Nexmark SMOKE suite, {args.generators} generators, {args.runner} runner "
                      f"(generator: {runs[0].generator_events_per_s:,.0f} events/s, not in the figures)")
                print(smoke_table(runs))
            return 0 if smoke_as_expected(runs) else 1
        check_query(args.query)
        if args.events_file:
            pairs, rate, generators = load_events(args.events_file), None, None
            if not pairs:
                raise JetbenchError(f"no events in {args.events_file!r}")
        else:
            (pairs, rate), generators = generate_timed(config), args.generators
        r = run_query(args.query, pairs, config, args.runner, rate, generators)
    finally:
        if args.runner == "spark":
            from ..spark import stop

            stop()
    if args.json:
        print(json.dumps(r.as_dict()))
        return 0
    where = f"{args.events_file}" if generators is None else f"{generators} generator(s)"
    print(f"nexmark Q{r.query}: {r.results:,} results from {r.events:,} events ({where}), {r.runner} runner")
    print(f"  digest {r.digest}  {r.seconds:.3f} s = {r.events_per_s:,.0f} events/s")
    if r.generator_events_per_s is not None:
        print(f"  generator (not included): {r.generator_events_per_s:,.0f} events/s")
    if r.beam_smoke_count is not None:
        print(f"  Beam's published SMOKE count: {r.beam_smoke_count:,}")
    return 0


def _kafka(args: argparse.Namespace, config: NexmarkConfig) -> int:
    """``--to-kafka TOPIC`` (write the generated events) or ``--from-kafka TOPIC --query N``."""
    from .kafka_events import run_query_from_kafka, write_events_to_kafka
    from .suite import generate_timed

    if args.to_kafka:
        pairs, _ = generate_timed(config)
        n = write_events_to_kafka(pairs, args.to_kafka, args.bootstrap_servers, args.partitions)
        print(json.dumps({"topic": args.to_kafka, "events": n}) if args.json
              else f"wrote {n:,} events to Kafka topic {args.to_kafka!r} at {args.bootstrap_servers}")
        return 0
    r = run_query_from_kafka(args.query, args.from_kafka, args.bootstrap_servers, config)
    if args.json:
        print(json.dumps(r.as_dict()))
        return 0
    print(f"nexmark Q{r.query}: {r.results:,} results from {r.events:,} events (Kafka topic {args.from_kafka!r}), "
          f"local runner")
    print(f"  digest {r.digest}  {r.seconds:.3f} s = {r.events_per_s:,.0f} events/s (reading the topic included)")
    return 0


def _run_beam(args: argparse.Namespace, config: NexmarkConfig) -> int:
    """``--runner beam-jetbench|beam-direct``: Beam's query code over the events as JSON lines."""
    import os
    import tempfile

    from ..core.errors import JetbenchError
    from .beam_queries import JETBENCH_RUNNER, RUNNERS, run_beam_query
    from .generator import events
    from .json_events import write_events

    if args.query is None or args.rate is not None:
        raise JetbenchError(f"--runner {args.runner} goes with --query N (no --suite, --rate or --write-events)")
    runners = (JETBENCH_RUNNER,) if args.runner == "beam-jetbench" else RUNNERS
    with tempfile.TemporaryDirectory() as tmp:
        path = args.events_file
        if path is None:
            path = os.path.join(tmp, "events.json")
            write_events(events(config), path)
        with open(path, encoding="utf-8") as f:
            n = sum(1 for line in f if line.strip())
        r = run_beam_query(args.query, path, runners=runners)
    r.update(events=n, events_per_s=n / max(r["seconds"], 1e-9))
    if args.json:
        print(json.dumps(r))
        return 0
    print(f"nexmark Q{args.query}: {r['results']:,} results from {n:,} events, Beam's query code on {r['runner']}")
    print(f"  {r['seconds']:.3f} s = {r['events_per_s']:,.0f} events/s (reading and parsing the events file included)")
    return 0

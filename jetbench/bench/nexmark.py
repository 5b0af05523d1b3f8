"""Nexmark per query: the local executor against the same query as a plain-Python loop.

The events (Beam's generator on one timeline by default, as Beam's own query tests run it) are
generated first, in memory; the generator's own events/s is reported beside and is not in any figure.
Then, per query, the jetbench pipeline (`jetbench.nexmark.queries`, one cooperative thread,
the events read by `jetbench.nexmark.source.from_events`) and the plain-Python loop
(`jetbench.nexmark.reference`: one pass over the events with dicts and lists, what a Python
programmer writes for the query; Q4 and Q6 reuse its Q9, as the pipelines reuse theirs) run
``repeat`` times, interleaved, the median kept. Both are timed from start to the full result
list; results are compared by their order-free digest (`jetbench.nexmark.digest`).

Why one timeline: with Beam's default of 100 generators each on its own timeline, a bid draws
its auction id from the global id space but its time from its generator's timeline, so at 1M
events bids come up to ~85 s of event time before their auction: past Beam's bid window (twice
the expected auction duration, 33 s), where Q9's winning bids (and Q4, Q6 on them) drop them as
Beam does, while the plain loop, an unbounded join, keeps them (1,778 of 32,548 winners differ).
On one timeline the two agree at every size measured (``--generators 100`` still runs it).

``ratio`` = jetbench events/s over the loop's (wall clock); ``cpu_ratio`` the same in process CPU
time (the loop's CPU seconds over jetbench's, of the same median runs): on a shared, loaded host
a thread waits for a core for part of its wall time, and the CPU ratio is the steadier figure. Flink's published per-core figures (Flink 1.13
SQL Nexmark, 8 workers) are set beside as ``flink_per_core`` where there is one. Beam's Python
DirectRunner on Beam's own query code is `jetbench.nexmark.beam_queries` (``--beam``), the
SparkRunner's SMOKE suite on ``local[2]`` against ``local[1]`` `jetbench.bench.nexmark_spark`.

>>> report = run(events=2_000, queries=[1, 2], repeat=1)
>>> [q["query"] for q in report.queries], report.results_equal
([1, 2], True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import JetbenchError
from ..core.execution import ExecutionService
from ..nexmark.config import NexmarkConfig
from ..nexmark.digest import digest
from ..nexmark.model import Event
from ..nexmark.reference import REFERENCE
from ..nexmark.suite import check_query, generate_timed
from .common import ReportFormat, Timing, interleaved, load_average, on_thread, timed

DEFAULT_EVENTS = 1_000_000
#: Flink 1.13 SQL Nexmark, 8 workers: events/s per core (the issue's anchors; Q6 and Q11 unpublished).
FLINK_PER_CORE = {0: 155_000, 1: 175_000, 2: 175_000, 3: 152_000, 4: 34_000, 5: 22_000, 7: 12_000,
                  8: 146_000, 9: 14_000}


class NexmarkBenchError(JetbenchError):
    """Bad arguments to ``jetbench bench nexmark``."""


@dataclass
class NexmarkBenchReport(ReportFormat):
    """Per query: events/s of jetbench and of the plain loop, their ratio, whether the results are equal."""

    events: int
    generators: int
    generator_events_per_s: float
    queries: list[dict[str, Any]]
    results_equal: bool
    ratio_basis: str = "wall-clock events/s, median of interleaved repeats, same process, one cooperative thread"
    extra: dict[str, Any] = field(default_factory=dict)

    def query(self, number: int) -> dict[str, Any]:
        return next(q for q in self.queries if q["query"] == number)

    def to_text(self) -> str:
        lines = [f"nexmark: {self.events:,} events in memory ({self.generators} generator(s); the generator made "
                 f"{self.generator_events_per_s:,.0f} events/s, not in the figures)",
                 f"  {'query':>5} {'results':>9} {'jetbench/s':>12} {'loop/s':>12} {'ratio':>6} {'cpu':>5} "
                 f"{'Flink/core':>10}  equal"]
        for q in self.queries:
            flink = "" if q["flink_per_core"] is None else f"{q['flink_per_core']:,}"
            lines.append(f"  {'Q' + str(q['query']):>5} {q['results']:>9,} {q['jetbench_events_per_s']:>12,.0f} "
                         f"{q['loop_events_per_s']:>12,.0f} {q['ratio']:>6.2f} {q['cpu_ratio']:>5.2f} {flink:>10}  "
                         f"{q['results_equal']}")
        lines.append(f"  ratio: {self.ratio_basis}; cpu: the same in process CPU time")
        if "beam_events" in self.extra:
            lines.append(f"  Beam's DirectRunner on Beam's query code, over the same {self.extra['beam_events']:,} events "
                         "(a JSON-lines file; jetbench over them in memory):")
            on_runner = any("beam_runner_events_per_s" in q for q in self.queries)
            runner_head = f" {'on jetbench/s':>13} {'results':>9} {'x direct':>8}" if on_runner else ""
            lines.append(f"  {'query':>5} {'Beam results':>12} {'Beam/s':>10} {'jetbench/s':>12} {'x Beam':>7}"
                         f"{runner_head}  runner")
            for q in self.queries:
                if "beam_failed" in q:
                    lines.append(f"  {'Q' + str(q['query']):>5} Beam's code fails: {q['beam_failed']}")
                elif "beam_events_per_s" in q:
                    runner_cells = (f" {q['beam_runner_events_per_s']:>13,.0f} {q['beam_runner_results']:>9,} "
                                    f"{q['beam_runner_x_direct']:>8.2f}") if on_runner else ""
                    lines.append(f"  {'Q' + str(q['query']):>5} {q['beam_results']:>12,} {q['beam_events_per_s']:>10,.0f} "
                                 f"{q['beam_jetbench_events_per_s']:>12,.0f} {q['beam_ratio']:>7.1f}{runner_cells}  "
                                 f"{q['beam_runner']}")
        return "\n".join(lines + self.extra_lines())


def engine_job(query: int, pairs: Sequence[tuple[int, Event]], config: NexmarkConfig) -> Callable[[], Any]:
    """The query as a jetbench job over ``pairs``, on one cooperative thread: a call runs it once."""
    from ..nexmark.queries import pipeline
    from ..nexmark.source import from_events

    dag = pipeline(query, from_events(pairs), config).to_dag()
    service = ExecutionService(cooperative_threads=1)

    def run_once() -> Any:
        return service.run(dag, progress=False)

    return run_once


def loop_job(query: int, events: list[Event], config: NexmarkConfig) -> Callable[[], Any]:
    """The query as the plain-Python loop of `jetbench.nexmark.reference`."""
    reference = REFERENCE[query]
    return on_thread(lambda: reference(events, config))


def measure_query(query: int, pairs: Sequence[tuple[int, Event]], events: list[Event], config: NexmarkConfig,
                  repeat: int) -> dict[str, Any]:
    timings: dict[str, Timing] = interleaved({"jetbench": engine_job(query, pairs, config),
                                              "loop": loop_job(query, events, config)}, repeat)
    jet, loop = timings["jetbench"], timings["loop"]
    jet_digest, loop_digest = digest(jet.result), digest(loop.result)
    n = len(events)
    return {"query": query, "events": n, "results": len(jet.result), "loop_results": len(loop.result),
            "jetbench_events_per_s": n / jet.wall_s, "loop_events_per_s": n / loop.wall_s,
            "ratio": loop.wall_s / jet.wall_s, "jetbench_s": jet.wall_s, "loop_s": loop.wall_s,
            "jetbench_cpu_s": jet.cpu_s, "loop_cpu_s": loop.cpu_s, "cpu_ratio": loop.cpu_s / jet.cpu_s,
            "digest": jet_digest,
            "results_equal": jet_digest == loop_digest and len(jet.result) == len(loop.result),
            "flink_per_core": FLINK_PER_CORE.get(query)}


def run(events: int = DEFAULT_EVENTS, queries: Sequence[int] | None = None, repeat: int = 3,
        generators: int = 1) -> NexmarkBenchReport:
    """Measure ``queries`` (default: all) over ``events`` generated events."""
    from ..nexmark.queries import QUERIES

    if isinstance(events, bool) or not isinstance(events, int) or events <= 0:
        raise NexmarkBenchError(f"bench nexmark: --events must be an int > 0, got {events!r}")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat <= 0:
        raise NexmarkBenchError(f"bench nexmark: --repeat must be an int > 0, got {repeat!r}")
    chosen = sorted(QUERIES) if queries is None else list(queries)
    for q in chosen:
        check_query(q)
    config = NexmarkConfig(num_events=events, num_event_generators=generators)
    load_before = load_average()
    pairs, generator_rate = generate_timed(config)
    in_memory = [e for _, e in pairs]
    figures = [measure_query(q, pairs, in_memory, config, repeat) for q in chosen]
    from ..core.compiled import build_info

    extra = {"repeat": repeat, "cooperative_threads": 1, "engine_build": build_info().kind,
             "load_average_before": load_before, "load_average_after": load_average(),
             "loop": "jetbench.nexmark.reference (one pass over the events with dicts and lists)"}
    return NexmarkBenchReport(events, generators, generator_rate, figures,
                              all(f["results_equal"] for f in figures), extra=extra)


def add_beam(report: NexmarkBenchReport, events: int, directory: str | None = None,
             jetbench_runner: bool = False, repeat: int = 1) -> None:
    """Beam's DirectRunner on Beam's own query code (`jetbench.nexmark.beam_queries`) for each
    query of ``report``, over ``events`` events written as JSON lines; jetbench runs once over
    the same events read back from the file, for the ratio (``beam_ratio`` = jetbench events/s
    over Beam's). With ``jetbench_runner``, Beam's query code also runs on jetbench's Beam runner
    (``beam_runner_events_per_s``; ``beam_runner_x_direct`` = its events/s over the
    DirectRunner's), the two runners alternating, ``repeat`` times each, the median kept.
    Raises `BeamMissingError` without Beam."""
    import tempfile
    from pathlib import Path

    from ..nexmark.beam_queries import (
        BeamMissingError,
        BeamQueryError,
        beam_missing,
        compare_runners,
        run_beam_query,
    )
    from ..nexmark.json_events import write_events
    from ..nexmark.suite import load_events

    why = beam_missing()
    if why:
        raise BeamMissingError(why)
    config = NexmarkConfig(num_events=events, num_event_generators=report.generators)
    pairs, _ = generate_timed(config)
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        path = Path(tmp) / "events.jsonl"
        write_events((e for _, e in pairs), path)
        pairs = load_events(path)
        for q in report.queries:
            try:
                if jetbench_runner:
                    both = compare_runners(q["query"], path, repeat)
                    beam, on_jet = both["direct"], both["jetbench"]
                    q.update(beam_runner_events_per_s=events / on_jet["seconds"],
                             beam_runner_x_direct=beam["seconds"] / on_jet["seconds"],
                             beam_runner_results=on_jet["results"])
                else:
                    beam = run_beam_query(q["query"], path)
            except BeamQueryError as exc:  # Beam's own code fails on it: say so, go on
                q.update(beam_failed=str(exc))
                continue
            jet_s = timed(engine_job(q["query"], pairs, config)).wall_s  # the collector quiet, as in `run`
            q.update(beam_results=beam["results"], beam_events_per_s=events / beam["seconds"],
                     beam_jetbench_events_per_s=events / jet_s, beam_ratio=beam["seconds"] / jet_s,
                     beam_runner=beam["runner"], **({"beam_failed": beam["failed"]} if "failed" in beam else {}))
    report.extra["beam_events"] = events


def run_command(args: Any) -> NexmarkBenchReport:
    """``jetbench bench nexmark``: the arguments of `jetbench.cli`."""
    report = run(events=args.events, queries=args.queries, repeat=args.repeat, generators=args.generators)
    if args.beam or args.beam_jetbench:
        add_beam(report, args.beam_events, jetbench_runner=args.beam_jetbench, repeat=args.repeat)
    if args.spark:
        from . import nexmark_spark

        report.extra.update(nexmark_spark.run())
    return report

"""Running Nexmark queries and summarising them: what ``jetbench nexmark`` prints.

`run_query` times a query over events already in memory (the generator's own speed is measured
apart, `generate_timed`) and returns a `QueryRun`: result count, the order-free digest of the
results, events/s. `smoke` runs Beam's SMOKE suite (Q0-Q9 and Q11) and sets Beam's published
counts beside ours.

Q3 is the one count that differs, on purpose: Beam's page publishes 444, from an older Query3 (a
CoGroupByKey in the global window with an element-count trigger); today's Query3 (per-seller state with a 600 s expiry timer) and Beam's own Query3Model
compute the whole join of the sellers in OR, ID or CA with their category-10 auctions, which at
100,000 events with 100 generators is 580 pairs, what jetbench gives (`SMOKE_NOTES`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import JetbenchError
from .config import NexmarkConfig
from .digest import digest
from .generator import generate
from .json_events import read_events
from .model import Event

if TYPE_CHECKING:
    from ..pipeline.connectors import Source

#: Result counts of Beam's SMOKE suite, published on Beam's Nexmark page (Java DirectRunner,
#: default configuration: 100 generators; 100,000 events, 10,000 for Q4, Q6 and Q9).
BEAM_SMOKE_COUNTS = {0: 100_000, 1: 92_000, 2: 351, 3: 444, 4: 40, 5: 12, 6: 401, 7: 1, 8: 6000, 9: 298, 11: 1919}
SMOKE_EVENTS = {4: 10_000, 6: 10_000, 9: 10_000}
#: Queries whose published count comes from another version of the query: ours, and why.
SMOKE_NOTES = {3: "Beam's 444 is from an older Query3 (a count-triggered CoGroupByKey); today's Query3 and "
                  "Query3Model compute the full join: 580"}


@dataclass(frozen=True)
class QueryRun:
    query: int
    events: int
    generators: int | None  # None: events read from a file
    runner: str
    results: int
    digest: str
    seconds: float
    events_per_s: float
    generator_events_per_s: float | None
    beam_smoke_count: int | None = None
    rate: int | None = None  # events/s asked of a rate-limited source (None: as fast as it goes)
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    flushed: int | None = None  # results of windows the input's end closed early (not in the latency)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def generate_timed(config: NexmarkConfig) -> tuple[list[tuple[int, Event]], float]:
    """The events of ``config`` in memory, and the generator's events/s."""
    started = time.perf_counter()
    pairs = list(generate(config))
    return pairs, len(pairs) / max(time.perf_counter() - started, 1e-9)


def load_events(path: str | Path) -> list[tuple[int, Event]]:
    """Events of a JSON-lines file, as ``(date_time, event)`` in time order."""
    pairs = [(e.date_time, e) for e in read_events(path)]
    pairs.sort(key=lambda p: p[0])
    return pairs


def check_query(query: int) -> None:
    from .queries import QUERIES

    if query not in QUERIES:
        raise JetbenchError(f"unknown query {query}: this version has queries {', '.join(map(str, sorted(QUERIES)))} "
                            "(Q10 writes files and Q12 needs processing-time triggers: not written)")


def run_query(query: int, pairs: list[tuple[int, Event]], config: NexmarkConfig, runner: Any = "local",
              generator_events_per_s: float | None = None, generators: int | None = None,
              source: Source | None = None) -> QueryRun:
    """Query ``query`` over ``pairs`` on ``runner`` (a name or a runner object, as `jetbench.run`
    takes); timed from submission to the last result. ``source``: the events of ``pairs`` as a
    source of their own (default `from_events(pairs)`; `events_source` makes one per runner)."""
    from ..runners import run
    from .queries import pipeline

    check_query(query)
    own = source is None
    if source is None:
        source = events_source(pairs, runner)
    try:
        p = pipeline(query, source, config)
        started = time.perf_counter()
        results = run(p, runner=runner, progress=False)
        seconds = time.perf_counter() - started
    finally:
        if own:
            release_source(source)
    name = runner if isinstance(runner, str) else type(runner).__name__
    return QueryRun(query, len(pairs), generators, name, len(results), digest(results), seconds,
                    len(pairs) / max(seconds, 1e-9), generator_events_per_s,
                    BEAM_SMOKE_COUNTS.get(query) if _beam_comparable(query, len(pairs), config) else None)


def _beam_comparable(query: int, events: int, config: NexmarkConfig) -> bool:
    """Whether Beam's published SMOKE count applies: the SMOKE size and Beam's default of 100
    generators (split timelines; with another number the timestamps, hence windows, differ)."""
    return events == SMOKE_EVENTS.get(query, 100_000) and config.num_event_generators == 100


def events_source(pairs: list[tuple[int, Event]], runner: Any = "local") -> Source:
    """The events of ``pairs`` as a source for ``runner``: `from_events` (the list itself), or
    for a Spark runner the events cached in Spark (`jetbench.spark.items_frame`): each task of a
    query's first stage reads its share there, where a source over the list would ship the whole
    list inside every task's plan. Unpersist a Spark source's cache with `release_source`."""
    from .source import from_events

    if not _is_spark(runner):
        return from_events(pairs)
    from ..spark.items_frame import cached_items

    session = runner.session if not isinstance(runner, str) else None
    return cached_items(pairs, timestamped=True, session=session).source("nexmark-events")


def release_source(source: Source) -> None:
    """Free what `events_source` holds outside this process (a Spark source's cache)."""
    release = getattr(source.supplier, "release", None)
    if release is not None:
        release()


def _is_spark(runner: Any) -> bool:
    if isinstance(runner, str):
        return runner == "spark"
    module = sys.modules.get("jetbench.spark.runner")  # a SparkRunner object: its module is loaded
    return module is not None and isinstance(runner, module.SparkRunner)


def smoke(generators: int = 100, runner: Any = "local") -> list[QueryRun]:
    """Beam's SMOKE suite: Q0-Q9 and Q11, 100,000 events each (10,000 for Q4, Q6, Q9). The events
    of each size are generated once and, for a Spark runner, cached in Spark once (`events_source`:
    not in the queries' times, as the generator is not)."""
    from .queries import QUERIES

    name = runner if isinstance(runner, str) else type(runner).__name__
    if runner == "spark":
        from ..spark import SparkRunner

        runner = SparkRunner()  # one runner, one session, for the whole suite
    runs = []
    cache: dict[int, tuple[list[tuple[int, Event]], float, Source]] = {}
    try:
        for q in sorted(QUERIES):
            n = SMOKE_EVENTS.get(q, 100_000)
            config = NexmarkConfig(num_events=n, num_event_generators=generators)
            if n not in cache:
                pairs, rate = generate_timed(config)
                cache[n] = pairs, rate, events_source(pairs, runner)
            pairs, gen_rate, source = cache[n]
            r = run_query(q, pairs, config, runner, gen_rate, generators, source)
            runs.append(QueryRun(**{**r.as_dict(), "runner": name, "beam_smoke_count": BEAM_SMOKE_COUNTS[q]}))
    finally:
        for _, _, source in cache.values():
            release_source(source)
    return runs


def smoke_table(runs: list[QueryRun]) -> str:
    lines = [f"{'query':>5} {'events':>8} {'ours':>8} {'Beam':>8}  {'same':<4}  {'digest':<16} {'events/s':>10}"]
    for r in runs:
        beam = "" if r.beam_smoke_count is None else f"{r.beam_smoke_count:,}"
        same = "" if r.beam_smoke_count is None else ("yes" if r.beam_smoke_count == r.results else
                                                       "no*" if r.query in SMOKE_NOTES else "NO")
        lines.append(f"{'Q' + str(r.query):>5} {r.events:>8,} {r.results:>8,} {beam:>8}  {same:<4}  {r.digest:<16} "
                     f"{r.events_per_s:>10,.0f}")
    lines += [f"  * Q{q}: {note}" for q, note in SMOKE_NOTES.items() if any(r.query == q for r in runs)]
    return "\n".join(lines)


def smoke_as_expected(runs: list[QueryRun]) -> bool:
    """Every count equals Beam's published one, except those `SMOKE_NOTES` explains."""
    return all(r.results == r.beam_smoke_count or r.query in SMOKE_NOTES for r in runs)


def run_rated(query: int, config: NexmarkConfig, lead_ms: int = 300) -> QueryRun:
    """Query ``query`` over events generated in the job and emitted at ``config.event_rate``
    events/s on the wall clock (the base time is the clock ``lead_ms`` from now, as Beam's
    ``useWallclockEventTime``), into a latency sink: each result's latency is the time from its
    timestamp (the event's time; a window's end for windowed results) to its arrival at the sink,
    over the results that arrived after their time (`jetbench.nexmark.latency`: windows the
    input's end flushes early are left out). Returns the result count, the p50/p99 latency and
    the events/s achieved (no digest)."""
    from dataclasses import replace

    from ..runners import run
    from .latency import settled_latency
    from .queries import pipeline
    from .source import nexmark

    check_query(query)
    config = replace(config, base_time=int(time.time() * 1000) + lead_ms)
    p = pipeline(query, nexmark(config, rate_limited=True), config, sink=settled_latency())
    stats = run(p, progress=False)
    seconds = time.time() - config.base_time / 1000
    return QueryRun(query, config.num_events, config.num_event_generators, "local", stats["count"] + stats["flushed"],
                    "", seconds,
                    config.num_events / max(seconds, 1e-9), None, None, config.event_rate, stats["p50_ms"],
                    stats["p99_ms"], stats["flushed"])

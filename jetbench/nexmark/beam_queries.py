"""Beam's own Nexmark query code on a Beam runner, each query in a fresh process: Beam's
DirectRunner for `jetbench.bench.nexmark` (``--beam``), JetbenchRunner or the DirectRunner for
``jetbench nexmark --runner beam-jetbench|beam-direct``.

The events are written as JSON lines by `jetbench.nexmark.json_events` (the form Beam's
``ParseJsonEventFn`` reads). Each query runs in a fresh Python process (``python -m
jetbench.nexmark.beam_queries --input FILE --query N``) that builds the pipeline as Beam's
``nexmark_launcher.py`` does in batch mode: ``ReadFromText`` -> ``ParseJsonEventFn`` -> each
event timestamped with its ``date_time`` -> Beam's ``queryN.load`` with the launcher's query
arguments -> Beam's result ``Monitor`` counting the results. It runs on ``DirectRunner`` (in
batch, Beam's in-memory FnApiRunner, one worker; for the queries it fails on, Q4, Q6 and Q9, on
its older ``BundleBasedDirectRunner``, see `RUNNERS`) and prints one JSON line: the result count
(Beam's metric) and the wall-clock seconds of ``run()`` to ``wait_until_finish()``, which
include reading and parsing the file (Beam's launcher cannot take events from memory).

Beam is optional: without it `beam_missing` says how to install it (``pip install
jetbench[beam]``) and `run_beam_query` raises `BeamMissingError`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..core.errors import JetbenchError

#: the query arguments Beam's nexmark_launcher.py passes to every query (its ``query_args``)
LAUNCHER_QUERY_ARGS = {"auction_skip": 123, "window_size_sec": 10, "window_period_sec": 5, "fanout": 5,
                       "num_max_workers": 5, "max_log_events": 100_000, "occasional_delay_sec": 3,
                       "max_auction_waiting_time": 600}
#: Beam's Python DirectRunner in batch (the FnApiRunner), then its older bundle-based
#: implementation for the queries the first cannot run (Q4, Q6, Q9 in Beam 2.77: the custom
#: merging window of Beam's winning_bids fails to encode, "Cannot convert _OpaqueWindow")
RUNNERS = ("DirectRunner", "BundleBasedDirectRunner")
#: jetbench's Beam runner (`jetbench.beam`), named as Beam's ``--runner`` imports it
JETBENCH_RUNNER = "jetbench.beam.JetbenchRunner"
_QUERIES_PACKAGE = "apache_beam.testing.benchmarks.nexmark.queries"


class BeamMissingError(JetbenchError):
    """Beam's DirectRunner comparison asked for, Beam not installed."""


class BeamQueryError(JetbenchError):
    """Beam's run of a query failed."""


def beam_missing() -> str | None:
    """Why Beam's comparison cannot run here (None: it can)."""
    if importlib.util.find_spec("apache_beam") is None:
        return "Beam's DirectRunner comparison needs Apache Beam: pip install jetbench[beam]"
    return None


def run_beam_query(query: int, events_file: str | Path, timeout: float = 1800.0,
                   runners: tuple[str, ...] = RUNNERS) -> dict[str, Any]:
    """Beam's query ``query`` over ``events_file`` in a fresh process, on the first of
    ``runners`` (default `RUNNERS`; or ``(JETBENCH_RUNNER,)``) that runs it: ``{"query",
    "results", "seconds", "runner"}`` (and ``"failed"``: the error of a runner that did not)."""
    why = beam_missing()
    if why:
        raise BeamMissingError(why)
    failures: list[str] = []
    for runner in runners:
        cmd = [sys.executable, "-m", "jetbench.nexmark.beam_queries", "--input", str(events_file), "--query", str(query),
               "--runner", runner]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise BeamQueryError(f"Beam's {runner} on Q{query} took over {timeout:.0f} s") from None
        if done.returncode == 0:
            figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
            if failures:
                figures["failed"] = "; ".join(failures)
            return figures
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        failures.append(f"{runner}: {last}")
    raise BeamQueryError(f"Beam failed on Q{query}: " + "; ".join(failures))


def compare_runners(query: int, events_file: str | Path, repeat: int = 1) -> dict[str, Any]:
    """Beam's query ``query`` on Beam's DirectRunner (`RUNNERS`, the first that runs it) and on
    `JETBENCH_RUNNER`, alternating, ``repeat`` times each; each runner's median-seconds run:
    ``{"direct": figures, "jetbench": figures}`` (as `run_beam_query` returns them). A failure
    of either runner raises `BeamQueryError`."""
    runs: dict[str, list[dict[str, Any]]] = {"direct": [], "jetbench": []}
    direct: tuple[str, ...] = RUNNERS
    for _ in range(repeat):
        figures = run_beam_query(query, events_file, runners=direct)
        direct = (figures["runner"],)  # the one that ran it: no failing runner again in the repeats
        runs["direct"].append(figures)
        runs["jetbench"].append(run_beam_query(query, events_file, runners=(JETBENCH_RUNNER,)))
    medians = {name: sorted(rs, key=lambda r: r["seconds"])[len(rs) // 2] for name, rs in runs.items()}
    if "failed" in runs["direct"][0]:
        medians["direct"]["failed"] = runs["direct"][0]["failed"]
    return medians


def _run_in_this_process(query: int, events_file: str, runner: str) -> dict[str, Any]:
    """The launcher's batch pipeline for ``query``, run on DirectRunner (import Beam only here)."""
    import logging

    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions, TypeOptions
    from apache_beam.testing.benchmarks.nexmark import nexmark_util
    from apache_beam.testing.benchmarks.nexmark.monitor import Monitor, MonitorSuffix
    from apache_beam.transforms import window

    logging.getLogger().setLevel(logging.WARNING)
    module = importlib.import_module(f"{_QUERIES_PACKAGE}.query{query}")
    options = PipelineOptions(["--runner", runner])
    options.view_as(TypeOptions).allow_unsafe_triggers = True  # as the launcher sets
    p = beam.Pipeline(options=options)
    nexmark_util.setup_coder()
    result_monitor = Monitor(".results", "result")
    events = (p | "reading_from_file" >> beam.io.ReadFromText(events_file)
              | "deserialization" >> beam.ParDo(nexmark_util.ParseJsonEventFn())
              | "timestamping" >> beam.Map(lambda e: window.TimestampedValue(e, e.date_time)))
    output = module.load(events, LAUNCHER_QUERY_ARGS, options)
    output | "result_monitor" >> beam.ParDo(result_monitor.doFn)  # pylint: disable=expression-not-assigned
    started = time.perf_counter()
    result = p.run()
    result.wait_until_finish()
    seconds = time.perf_counter() - started
    results = nexmark_util.get_counter_metric(result, result_monitor.namespace,
                                              result_monitor.name_prefix + MonitorSuffix.ELEMENT_COUNTER)
    return {"query": query, "results": max(int(results), 0), "seconds": seconds, "runner": runner}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jetbench.nexmark.beam_queries",
                                     description="Beam's Nexmark query on DirectRunner over a JSON-lines events file")
    parser.add_argument("--input", required=True)
    parser.add_argument("--query", type=int, required=True)
    parser.add_argument("--runner", choices=[*RUNNERS, JETBENCH_RUNNER], default=RUNNERS[0])
    args = parser.parse_args(argv)
    print(json.dumps(_run_in_this_process(args.query, args.input, args.runner)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

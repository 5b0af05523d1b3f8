"""The ``jetbench`` command line: the word-count demo and the benchmarks.

    jetbench demo [--lines N] [--threads N] [--top N] [--source python|spark]
    jetbench bench wordcount [--lines N] [--pipeline] [--json]
    jetbench bench chain [--items N] [--fused] [--json]
    jetbench bench dashboard [--items N] [--hz HZ] [--json]
    jetbench bench spark-wordcount [--lines N] [--repeat N] [--json]
    jetbench bench spark-windows [--events N] [--repeat N] [--json]
    jetbench bench spark-joins [--events N] [--repeat N] [--json]
    jetbench bench snapshots [--interval-ms MS] [--keys N] [--lines N] [--items N] [--json]
    jetbench bench nexmark [--events N] [--queries Q ...] [--generators G] [--repeat N] [--beam] [--beam-jetbench] [--spark] [--json]
    jetbench idle-experiment [--quick] [--json] [--source generator|spark] ...
    jetbench nexmark --query N | --suite smoke [--events N] [--generators G] [--runner local|spark|beam-jetbench|beam-direct] [--rate R] [--json]
    jetbench lab [--dir DIR] [--port N] [--no-browser] [--reset] [jupyter lab options...]
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bench.common import ReportFormat


def _demo_job(args: argparse.Namespace) -> tuple[Any, str]:
    """The word-count DAG over the corpus (made in Python, or served by an embedded local Spark)."""
    if args.source == "spark":
        from .spark import dataframe_sources as sources
        from .spark import datasets, session
        from .wordcount import wordcount_pipeline

        spark = session()
        corpus_df = datasets.corpus(args.lines)
        where = f"served by Spark ({spark.sparkContext.master}, embedded, {corpus_df.rdd.getNumPartitions()} partitions)"
        return wordcount_pipeline(sources.dataframe(corpus_df, columns=["line"], as_="value")).to_dag(), where
    from .datasets import corpus
    from .wordcount import wordcount_dag

    return wordcount_dag(corpus(args.lines)), "generated in Python"


def _demo(args: argparse.Namespace) -> int:
    from .core import ExecutionService

    print(f"jetbench demo: Jet's word-count job (\"The Word Count Task\" of its DAG documentation) over {args.lines:,} "
          f"lines of made-up words, Zipf-distributed, {args.threads} cooperative thread(s)")
    dag, where = _demo_job(args)
    print(f"corpus {where}")
    service = ExecutionService(cooperative_threads=args.threads)
    started = time.perf_counter()
    job = service.submit(dag, name="wordcount")
    counts = job.join()
    elapsed = time.perf_counter() - started
    words = sum(c for _, c in counts)
    print(f"counted {words:,} words ({len(counts):,} distinct) in {elapsed:.2f} s "
          f"= {words / elapsed:,.0f} words/s\n")
    print(f"top {args.top} words:")
    for word, count in sorted(counts, key=lambda wc: (-wc[1], wc[0]))[: args.top]:
        print(f"  {word:<16}{count:>10,}")
    print("\nper-tasklet metrics:")
    print(job.metrics().table())
    if args.source == "spark":
        from .spark import stop

        stop()
    return 0


def _bench(args: argparse.Namespace) -> int:
    report: ReportFormat
    if args.name == "wordcount":
        from .bench import wordcount

        report = wordcount.run(lines=200_000 if args.lines is None else args.lines, repeat=args.repeat, threads=args.threads, pipeline=args.pipeline)
    elif args.name == "chain":
        from .bench import chain

        report = chain.run(items=args.items or 2_000_000, repeat=args.repeat, fused=args.fused, threads=args.threads,
                           queue_items=args.queue_items)
    elif args.name == "dashboard":
        from .bench import dashboard

        report = dashboard.run(items=args.items or 2_000_000, repeat=args.repeat, threads=args.threads, hz=args.hz)
    elif args.name == "spark-wordcount":
        from .bench import spark_wordcount

        report = spark_wordcount.run(lines=spark_wordcount.DEFAULT_LINES if args.lines is None else args.lines, repeat=args.repeat)
    elif args.name == "spark-windows":
        from .bench import spark_windows

        report = spark_windows.run(events=args.events, repeat=args.repeat)
    elif args.name == "spark-joins":
        from .bench import spark_joins

        report = spark_joins.run(events=args.events, repeat=args.repeat)
    elif args.name == "nexmark":
        from .bench import nexmark

        report = nexmark.run_command(args)
    elif args.name == "snapshots":
        from .bench import snapshots

        report = snapshots.run(lines=snapshots.DEFAULT_LINES if args.lines is None else args.lines,
                               items=snapshots.DEFAULT_ITEMS if args.items is None else args.items,
                               interval_ms=args.interval_ms, keys=args.keys, repeat=args.repeat, threads=args.threads)
    else:  # argparse restricts the choices
        raise AssertionError(args.name)
    print(report.to_json() if args.json else report.to_text())
    return 0 if report.results_equal else 1


def _idle_experiment(args: argparse.Namespace) -> int:
    import json

    from .experiments import (
        QUICK,
        blog_table,
        idle_costs,
        idle_sweep,
        sleep_granularity,
        summarize,
        targets,
    )
    from .experiments.sweep import DEFAULT_RATES

    rates = args.rates or (QUICK["rates"] if args.quick else DEFAULT_RATES)
    floors = args.floors or QUICK["min_idle_us"]
    seconds = args.seconds if args.seconds is not None else (QUICK["seconds"] if args.quick else 10.0)
    warmup = args.warmup if args.warmup is not None else (QUICK["warmup"] if args.quick else 2.0)
    frame = idle_sweep(rates=rates, min_idle_us=floors, seconds=seconds, warmup=warmup, source=args.source,
                       strategies=args.strategies, csv_path=args.csv, progress=not args.no_progress,
                       repeats=args.repeats)
    if args.plots:
        from pathlib import Path

        from .experiments import plot_cpu_vs_rate, plot_latency_vs_floor, plot_tradeoff

        out = Path(args.plots)
        out.mkdir(parents=True, exist_ok=True)
        for name, plot in (("cpu_vs_rate", plot_cpu_vs_rate), ("latency_vs_floor", plot_latency_vs_floor),
                           ("tradeoff", plot_tradeoff)):
            plot(frame).savefig(out / f"{name}.png", dpi=110)
    if args.json:
        print(json.dumps(json.loads(frame.to_json(orient="records"))))
        return 0
    print("sleep on this machine (requested -> real length, CPU per wake-up, CPU % of a loop doing only that):")
    for cost in sleep_granularity(seconds=0.3):
        print(f"  sleep({cost.requested_us:>6g} us) -> {cost.actual_us:8.1f} us, {cost.cpu_per_wakeup_us:5.1f} us CPU, "
              f"{cost.cpu_percent:5.1f} %")
    print("\nCPU % at each rate: Jet 3.0 (Jet's \"Idle Green Threads\" blog post, 2019) beside jetbench")
    print(blog_table(frame).to_string())
    print("\nthe targets (medians over repeats; bound: the best any strategy that sleeps can do here,"
          " or on the blog rows the strategies' own wake-ups and rounds at hot-cache cost):")
    print(targets(frame).round(3).to_string(index=False))
    points = summarize(frame)
    costs = idle_costs(points)
    if costs is not None:
        print(f"bounds from: a wake-up {costs.wake_s * 1e6:.1f} us CPU, shortest sleep {costs.shortest_sleep_s * 1e6:.0f} us, "
              f"a hot round {costs.round_s * 1e6:.1f} us + {costs.item_s * 1e6:.2f} us per item")
    cols = ["rate", "min_idle_us", "strategy", "cpu_percent", "cpu_min", "cpu_max", "achieved_rate",
            "latency_p50_ms", "latency_p99_ms", "wakeups_per_s", "runs"]
    print("\nall points" + (" (medians over repeats):" if args.repeats > 1 else ":"))
    print(points[cols].round(3).to_string(index=False))
    print(f"\nCSV: {frame.attrs['csv_path']}")
    return 0


def _lab(args: argparse.Namespace, extra: list[str]) -> int:
    from pathlib import Path

    from .lab import run_lab

    if args.reset and args.dir:
        print("jetbench lab: --reset resets the working copy in your data directory; it does not apply to --dir",
              file=sys.stderr)
        return 2
    return run_lab(Path(args.dir) if args.dir else None, port=args.port, open_browser=not args.no_browser,
                   token=args.token, extra=extra, reset=args.reset)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jetbench", description="Dataflow DAGs on a cooperative executor.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("version", help="print the version and which build of the engine is loaded")

    demo = sub.add_parser("demo", help="run Jet's word-count job over a made-up corpus and print top words and metrics")
    demo.add_argument("--lines", type=int, default=200_000, help="corpus lines to generate (default 200000)")
    demo.add_argument("--threads", type=int, default=1, help="cooperative threads (default 1)")
    demo.add_argument("--top", type=int, default=10, help="how many top words to print")
    demo.add_argument("--source", choices=["python", "spark"], default="python",
                      help="make the corpus in Python, or have an embedded local Spark serve it (default python)")

    bench = sub.add_parser("bench", help="benchmarks against a plain-Python baseline")
    bench.add_argument("name", choices=["wordcount", "chain", "dashboard", "spark-wordcount", "spark-windows", "spark-joins",
                                          "nexmark",
                                          "snapshots"])
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    bench.add_argument("--repeat", type=int, default=3, help="repeats per side, interleaved (median kept)")
    bench.add_argument("--threads", type=int, default=1, help="cooperative threads")
    bench.add_argument("--lines", type=int,
                       help="wordcount / spark-wordcount / snapshots: corpus lines (default 200000 / 1000000 / 1000000)")
    bench.add_argument("--pipeline", action="store_true", help="wordcount: run the Pipeline version")
    bench.add_argument("--items", type=int,
                       help="chain, dashboard: source items (default 2000000; snapshots: the chain's, default 25000000)")
    bench.add_argument("--fused", action="store_true", help="chain: one fused map vertex instead of six")
    bench.add_argument("--queue-items", type=int, default=100_000,
                       help="chain: items for the thread-per-vertex queue.Queue baseline (0 = skip)")
    bench.add_argument("--interval-ms", type=int, default=1000, help="snapshots: snapshot interval (default 1000)")
    bench.add_argument("--keys", type=int, default=100_000,
                       help="snapshots: keys of the keyed state snapshot and restarted (default 100000; 0: skip)")
    bench.add_argument("--hz", type=float, default=10.0, help="dashboard: sampler refresh rate (default 10)")
    bench.add_argument("--events", type=int, default=1_000_000,
                       help="nexmark: events in memory; spark-windows, spark-joins: parquet events (default 1000000)")
    bench.add_argument("--queries", type=int, nargs="+", help="nexmark: the queries (default all)")
    bench.add_argument("--generators", type=int, default=1,
                       help="nexmark: event generators, each on its own timeline (default 1)")
    bench.add_argument("--beam", action="store_true",
                       help="nexmark: also Beam's DirectRunner on Beam's own query code (--beam-events of them)")
    bench.add_argument("--beam-jetbench", action="store_true",
                       help="nexmark: --beam, and Beam's query code on jetbench's Beam runner too, the two runners "
                            "alternating --repeat times each")
    bench.add_argument("--beam-events", type=int, default=100_000,
                       help="nexmark: events for Beam's DirectRunner (default 100000)")
    bench.add_argument("--spark", action="store_true", help="nexmark: also the SparkRunner's SMOKE suite, local[2] "
                                                            "against local[1]")
    idle = sub.add_parser("idle-experiment", help="the idle-CPU sweep of Jet's \"Idle Green Threads\" blog post (2019) over rates, floors and strategies")
    idle.add_argument("--quick", action="store_true", help="short points, rates 1000 and 250000 (for CI)")
    idle.add_argument("--json", action="store_true", help="print the rows as one JSON list")
    idle.add_argument("--source", choices=["generator", "spark"], default="generator")
    idle.add_argument("--rates", type=float, nargs="+", help="items per second")
    idle.add_argument("--floors", type=float, nargs="+", help="minimum idle microseconds (default 25 1000)")
    idle.add_argument("--strategies", nargs="+", default=["backoff", "timer"], choices=["backoff", "timer"])
    idle.add_argument("--seconds", type=float, help="measured seconds per point (default 10, quick 1)")
    idle.add_argument("--warmup", type=float, help="seconds before measuring (default 2, quick 0.5)")
    idle.add_argument("--repeats", type=int, default=1,
                      help="run every point this many times (full passes); reports take medians")
    idle.add_argument("--csv", help="where to write the CSV (default ~/.cache/jetbench/experiments/)")
    idle.add_argument("--plots", help="a directory to save the figures in as PNG")
    idle.add_argument("--no-progress", action="store_true", help="no progress bar")

    from .nexmark.cli import add_arguments as add_nexmark_arguments

    nexmark = sub.add_parser("nexmark", help="a Nexmark query (Beam's generator, event for event) or Beam's SMOKE suite")
    add_nexmark_arguments(nexmark)

    lab = sub.add_parser("lab", help="JupyterLab on 127.0.0.1 with the notebooks, 01-getting-started open",
                         epilog="Other options are passed to `jupyter lab` unchanged.")
    lab.add_argument("--dir", help="the notebook folder (default: the checkout's notebooks/)")
    lab.add_argument("--port", type=int, help="port to listen on (default: JupyterLab's, 8888 or the next free)")
    lab.add_argument("--token", help="the login token (default: a random one, printed in the URL)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a web browser")
    lab.add_argument("--reset", action="store_true",
                     help="copy every notebook of the working copy afresh (your versions are kept as NAME.edited-TIME)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "lab":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "lab":
        return _lab(args, extra)
    if args.command == "version":
        from . import __version__
        from .core.compiled import build_info

        print(__version__)
        print(f"engine: {build_info().describe()}")  # compiled (which modules) or pure (and why)
        return 0
    from .core.errors import JetbenchError

    try:
        if args.command == "demo":
            return _demo(args)
        if args.command == "idle-experiment":
            return _idle_experiment(args)
        if args.command == "nexmark":
            from .nexmark.cli import run_command

            return run_command(args)
        return _bench(args)
    except JetbenchError as exc:  # bad arguments and the like: a message, not a traceback
        print(f"jetbench {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

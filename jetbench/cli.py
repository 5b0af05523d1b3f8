"""The ``jetbench`` command line: the word-count demo and the benchmarks.

    jetbench demo [--lines N] [--threads N] [--top N]
    jetbench bench wordcount [--lines N] [--pipeline] [--json]
    jetbench bench chain [--items N] [--fused] [--json]
"""

from __future__ import annotations

import argparse
import sys
import time


def _demo(args: argparse.Namespace) -> int:
    from .core import ExecutionService
    from .datasets import corpus
    from .examples import wordcount_dag

    print(f"jetbench demo: word count (seed 002) over {args.lines:,} generated lines, "
          f"{args.threads} cooperative thread(s)")
    lines = corpus(args.lines)
    service = ExecutionService(cooperative_threads=args.threads)
    started = time.perf_counter()
    job = service.submit(wordcount_dag(lines), name="wordcount")
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
    return 0


def _bench(args: argparse.Namespace) -> int:
    if args.name == "wordcount":
        from .bench import wordcount

        report = wordcount.run(lines=args.lines, repeat=args.repeat, threads=args.threads, pipeline=args.pipeline)
    elif args.name == "chain":
        from .bench import chain

        report = chain.run(items=args.items, repeat=args.repeat, fused=args.fused, threads=args.threads,
                           queue_items=args.queue_items)
    else:  # argparse restricts the choices
        raise AssertionError(args.name)
    print(report.to_json() if args.json else report.to_text())
    return 0 if report.results_equal else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jetbench", description="Dataflow DAGs on a cooperative executor.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("version", help="print the version")

    demo = sub.add_parser("demo", help="run seed 002's word count and print top words and metrics")
    demo.add_argument("--lines", type=int, default=200_000, help="corpus lines to generate (default 200000)")
    demo.add_argument("--threads", type=int, default=1, help="cooperative threads (default 1)")
    demo.add_argument("--top", type=int, default=10, help="how many top words to print")

    bench = sub.add_parser("bench", help="benchmarks against a plain-Python baseline")
    bench.add_argument("name", choices=["wordcount", "chain"])
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    bench.add_argument("--repeat", type=int, default=3, help="repeats per side, interleaved (median kept)")
    bench.add_argument("--threads", type=int, default=1, help="cooperative threads")
    bench.add_argument("--lines", type=int, default=200_000, help="wordcount: corpus lines")
    bench.add_argument("--pipeline", action="store_true", help="wordcount: run the Pipeline version")
    bench.add_argument("--items", type=int, default=2_000_000, help="chain: source items")
    bench.add_argument("--fused", action="store_true", help="chain: one fused map vertex instead of six")
    bench.add_argument("--queue-items", type=int, default=100_000,
                       help="chain: items for the thread-per-vertex queue.Queue baseline (0 = skip)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "version":
        from . import __version__

        print(__version__)
        return 0
    if args.command == "demo":
        return _demo(args)
    return _bench(args)


if __name__ == "__main__":
    sys.exit(main())

"""The runner's pipeline options (``--jetbench_cooperative_threads=2`` on a command line, or
``JetbenchRunner(cooperative_threads=2)``).

>>> from apache_beam.options.pipeline_options import PipelineOptions
>>> o = PipelineOptions(["--jetbench_cooperative_threads=3"]).view_as(JetbenchOptions)
>>> o.jetbench_cooperative_threads, o.jetbench_idle_strategy
(3, 'backoff')
"""

from __future__ import annotations

import argparse
from typing import Any

from apache_beam.options.pipeline_options import PipelineOptions

__all__ = ["JetbenchOptions", "SETTINGS"]

#: setting -> (type, default, help); the option is ``--jetbench_<setting>``
SETTINGS: dict[str, tuple[type, Any, str]] = {
    "cooperative_threads": (int, 1, "cooperative worker threads (Impulse, Flatten, GroupByKey run on them); one by "
                            "default: under the GIL a second one runs no Python in parallel, it only contends for it"),
    "parallelism": (int, None, "instances per vertex but Impulse (default: the cooperative threads)"),
    "min_idle_us": (float, 25.0, "the idle floor: a worker's first park after a round without progress, in us"),
    "max_idle_us": (float, 500.0, "the longest park of an idle cooperative worker, in us"),
    "idle_strategy": (str, "backoff", "what an idle worker does: 'backoff' or 'timer'"),
    "queue_size": (int, None, "capacity in items (encoded chunks) of each queue of each edge"),
    "outbox_capacity": (int, 1024, "items a vertex's outbox holds per edge before it refuses more; with a guarantee, "
                        "a small one keeps the data ahead of a snapshot barrier short"),
    "processing_guarantee": (str, "none", "'none', 'at_least_once' or 'exactly_once': snapshots of every vertex's "
                             "state, restarts from the last one after a failure (jetbench.beam.guarantees)"),
    "snapshot_interval_ms": (int, 10_000, "with a guarantee: time between two snapshots, in ms"),
    "max_restarts": (int, 3, "with a guarantee: restarts from the last snapshot before the job fails"),
    "snapshot_store": (str, None, "with a guarantee: the SQLite snapshot store's path (trusted like code: it holds pickles; default: a temporary store of the job's own; --jetbench_resume needs one)"),
    "resume": (bool, False, "with a guarantee: go on from the snapshots a killed run of the same --job_name left"),
    "merge_in_harness": (bool, False, "leave a lifted combine's accumulators to the merge step in the SDK harness "
                         "rather than merging them in the grouping vertex as they arrive (for comparisons)"),
    "drain": (bool, False, "run as a drain: splittable DoFns truncate their restrictions (Beam's is_drain)"),
    "sdk_workers": (int, 0, "run the stateless stages' bundles in this many SDK worker processes (Beam's subprocess "
                    "SDK harness over gRPC; parallelism defaults to it); 0: in this process (jetbench.beam.workers)"),
    "gc_freeze": (bool, True, "keep the objects alive when the job starts out of Python's full garbage collections "
                  "while it runs (gc.freeze, undone when it ends; jetbench.beam.heap); --no-jetbench_gc_freeze: off"),
}


class JetbenchOptions(PipelineOptions):
    """Options of `jetbench.beam.JetbenchRunner`."""

    @classmethod
    def _add_argparse_args(cls, parser: Any) -> None:
        for name, (kind, default, text) in SETTINGS.items():
            if kind is bool and default:  # on unless --no-jetbench_<name>
                parser.add_argument(f"--jetbench_{name}", action=argparse.BooleanOptionalAction, default=default,
                                    help=text)
            elif kind is bool:
                parser.add_argument(f"--jetbench_{name}", action="store_true", default=default, help=text)
            else:
                parser.add_argument(f"--jetbench_{name}", type=kind, default=default, help=text)

"""Kernel-side cost of the DAG builder on a 50-vertex DAG: opening it (reading the suppliers back as
code, layout, validation, the widget state), one edit from the front end, a refresh after an edit
in code, and ``builder.dag`` / ``to_code``.

    .venv/bin/python benchmarks/builder_50.py [--repeat 21]

Prints the median and the spread (min-max) in milliseconds. No browser: the front end's side
(rendering) is measured by the browser tests.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import sys
import tempfile
import time

from jetbench import DAG
from jetbench.notebook import DagBuilder
from jetbench.notebook.builder import BuilderModel
from jetbench.notebook.builder.code_text import check_code, check_expr, check_steps
from jetbench.notebook.headless import recording_comms
from jetbench.processors import map_processor
from jetbench.processors.function_source import lambda_node

BRANCHES = 7  # 1 source + 7 branches x 7 vertices = 50 vertices


def fifty() -> DAG:
    """One source fanning out to 7 branches of map, filter, flat_map, map, accumulate, combine, sink.

    Every function is its own lambda (as in a real DAG): the DAG is built by a module written to a
    temporary file, so ``inspect`` finds each lambda's source the way it does in a notebook."""
    lines = ["from jetbench import DAG, Edge",
             "from jetbench.processors import *",
             "from jetbench.processors.aggregate_operation import summing",
             "dag = DAG()",
             "src = dag.new_vertex('source', items_source(list(range(1000))), 1)"]
    for b in range(BRANCHES):
        lines += [
            f"c = [dag.new_vertex('scale-{b}', map_processor(lambda x: x * 3 + {b})),",
            f"     dag.new_vertex('odd-{b}', filter_processor(lambda x: x % 2 == {b % 2})),",
            f"     dag.new_vertex('split-{b}', flat_map_processor(lambda x: [x, x // {b + 2}])),",
            f"     dag.new_vertex('bucket-{b}', map_processor(lambda x: (x % {b + 10}, x))),",
            f"     dag.new_vertex('acc-{b}', accumulate_by_key(lambda kv: kv[0] + {b}, summing(lambda kv: kv[1])), 2),",
            f"     dag.new_vertex('comb-{b}', combine_by_key(counting()), 2),",
            f"     dag.new_vertex('out-{b}', collect_sink(), 1)]",
            f"dag.edge(Edge.from_(src, {b}).to(c[0]))",
            "for i, (x, y) in enumerate(zip(c, c[1:])):",
            "    dag.edge(Edge.between(x, y).partitioned(lambda kv: kv[0]) if i == 4 else Edge.between(x, y))",
        ]
    directory = tempfile.mkdtemp(prefix="jetbench-builder-bench-")
    path = os.path.join(directory, "fifty_vertices.py")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location("fifty_vertices", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    dag = module.dag
    assert len(dag.vertices) == 50
    return dag


def timed(fn, repeat: int) -> tuple[float, float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), min(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    dag = fifty()
    rows = []

    def add(what: str, fn) -> None:
        rows.append((what, *timed(fn, args.repeat)))

    BuilderModel()  # the palette's one-time checks (is pyspark importable?) are not part of the figures
    def cold() -> None:  # as the first time: nothing read or checked before
        lambda_node.cache_clear()
        for check in (check_code, check_expr, check_steps):
            check.cache_clear()
        BuilderModel().load_dag(dag)

    add("BuilderModel.load_dag, first time (read 50 suppliers' source as code, layout)", cold)
    add("BuilderModel.load_dag, again (sources read before)", lambda: BuilderModel().load_dag(dag))
    model = BuilderModel()
    model.load_dag(dag)
    add(f"problems_json (validation of 50 vertices, {len(dag.edges)} edges)", model.problems_json)
    with recording_comms():
        add("DagBuilder(dag): open, validate, widget state", lambda: DagBuilder(dag, namespace={}, auto_refresh=False))
        builder = DagBuilder(dag, namespace={}, auto_refresh=False)
        vid = builder.model.vertex("scale-3")["id"]
        flip = iter(range(10**9))

        def edit() -> None:  # what a front-end edit costs in the kernel: apply, validate, send the state
            n = next(flip)
            builder._handle_msg({"content": {"data": {"method": "custom", "content": {
                "cmd": "update_vertex", "id": vid, "changes": {"params": {"fn": f"x * 3 + {n % 7}"}}}}},
                "buffers": []})

        add("one edit from the front end (update_vertex -> new state)", edit)

        def code_edit() -> None:  # an edit in code, then refresh (merge + new state)
            dag.vertex("scale-5").supplier = map_processor(lambda x: x * 5)
            builder.refresh()

        add("refresh after an edit of the DAG in code", code_edit)
        add("refresh with nothing changed", builder.refresh)
        add("builder.dag (compile 50 vertices' code into a DAG)", lambda: builder.dag)
        add("builder.to_code()", builder.to_code)
    print(f"DAG builder, 50 vertices / {len(dag.edges)} edges, median of {args.repeat} (min-max), ms")
    print(f"Python {platform.python_version()} on {platform.machine()}, {sys.platform}")
    width = max(len(r[0]) for r in rows)
    for what, median, low, high in rows:
        print(f"  {what:<{width}}  {median:8.2f}  ({low:.2f}-{high:.2f})")


if __name__ == "__main__":
    main()

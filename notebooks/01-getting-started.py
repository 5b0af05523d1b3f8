# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 · Getting started: Jet's word count
#
# jetbench runs dataflow programs the way Hazelcast Jet does: a job is a **DAG** whose vertices
# are processors and whose edges are bounded queues, executed by a few cooperative worker
# threads inside this kernel.
#
# This notebook writes the classic word count — the one Jet's reference manual builds in its
# chapter on the DAG ("The Word Count Task") — with the high-level **Pipeline** API, as a
# **DAG** of processors, and in the visual **builder**; draws the DAG; checks every version
# against a plain Python loop; and shows the counts as a pandas DataFrame. The word count
# lives in the package, in `jetbench.wordcount`; this notebook imports it from there.

# %% tags=["parameters"]
LINES = 2_000        # lines of generated text
VOCABULARY = 500     # distinct words in the generated corpus
PARALLELISM = 2      # instances of each vertex in the hand-built DAG
THREADS = 2          # cooperative worker threads

# %%
from collections import Counter

from jetbench import ExecutionService, Pipeline, aggregate, run, sinks, sources
from jetbench.datasets import corpus
from jetbench.wordcount import non_empty, tokenize, word_key, wordcount_dag, wordcount_pipeline

lines = corpus(LINES, vocabulary_size=VOCABULARY, seed=42)
lines[:3]

# %% [markdown]
# ## The single-threaded loop
#
# The manual starts from the obvious nested loop: lower-case each line, split it on runs of
# non-word characters, count the non-empty words. It is our reference answer.

# %%
expected = Counter()
for line in lines:
    for word in tokenize(line):
        if word:
            expected[word] += 1
print(f"{sum(expected.values())} words, {len(expected)} distinct")
expected.most_common(5)

# %% [markdown]
# ## The same computation as a Pipeline
#
# The Pipeline API separates the steps — read, flat-map into words, filter out empty ones,
# group by word and count, write — and lets the planner turn them into a DAG. Displaying the
# pipeline draws that planned DAG with Graphviz.

# %%
p = Pipeline()
(p.read_from(sources.items(lines))
    .flat_map(tokenize)
    .filter(non_empty)
    .group_by(word_key)
    .aggregate(aggregate.counting())
    .write_to(sinks.pandas()))
p

# %% [markdown]
# `explain()` says what each vertex runs. Note what the planner did, exactly as the manual
# describes the word count's DAG: the flat-map and the filter were **fused** into one vertex (no queue between
# them), and the count runs in **two stages**, a local *accumulate* followed by a
# *combine* behind a partitioned edge, so that every word's partial counts meet in one place.

# %%
print(p.explain())
planned = p.to_dag()
names = [v.name for v in planned.vertices]
assert any(name.startswith("fused(") for name in names), names
assert [e.routing.value for e in planned.edges].count("partitioned") == 1

# %% [markdown]
# The fused vertex runs its steps as **one list comprehension** over each batch of lines.
# `tokenize` and `non_empty` are each a single expression, so jetbench writes them into that
# comprehension in place of their calls, as a JIT inlines a call: no Python frame per word. Only
# what provably means the same is inlined (the function's source must compile to its very
# bytecode); anything else stays a call, and `JETBENCH_INLINE=0` turns it off. Here is the code
# the vertex runs:

# %%
fused = next(v for v in planned.vertices if v.name.startswith("fused("))
print(fused.supplier.transform.generated_code)
assert "non_empty" not in fused.supplier.transform.generated_code  # written out, not called

# %% [markdown]
# `sinks.pandas()` makes the job's result a DataFrame. `run()` submits the job to a fresh
# `ExecutionService`, waits for it, and returns that result.

# %%
counts = run(p, cooperative_threads=THREADS).rename(columns={0: "word", 1: "count"})
assert dict(zip(counts["word"], counts["count"], strict=True)) == expected
counts.sort_values("count", ascending=False).head(10).reset_index(drop=True)

# %% [markdown]
# The package ships this very pipeline as `jetbench.wordcount.wordcount_pipeline(lines)`
# (with a list sink instead of a DataFrame); the benchmarks and notebook 05 use that one.

# %%
assert dict(run(wordcount_pipeline(lines), cooperative_threads=THREADS)) == expected


# %% [markdown]
# ## The DAG underneath
#
# Underneath, the pipeline is just a DAG. `jetbench.wordcount.wordcount_dag` writes it with
# the core API, vertex by vertex, as in the manual's picture: a source, the fused tokenizer,
# accumulate and combine joined by edges **partitioned by word** (equal words always reach the
# same instance), and a sink. Here is its source, straight from the package:

# %%
import inspect

from IPython.display import Code

Code(inspect.getsource(wordcount_dag), language="python")

# %% [markdown]
# Each vertex runs `PARALLELISM` instances; the sink runs one. Displaying the DAG draws it.

# %%
dag = wordcount_dag(lines, parallelism=PARALLELISM)
dag

# %% [markdown]
# Submitting a DAG returns a `Job` at once; the work happens on background threads.
# `join()` waits for the result, and `metrics()` shows what every tasklet (processor
# instance) did and on which worker thread it ran.

# %%
service = ExecutionService(cooperative_threads=THREADS)
job = service.submit(dag, name="word-count")
dag_counts = dict(job.join(timeout=60))
print(job.metrics().table())
assert dag_counts == expected
assert dag_counts == dict(zip(counts["word"], counts["count"], strict=True))

# %% [markdown]
# ## The visual builder
#
# `jetbench.notebook.DagBuilder` draws DAGs on a canvas in JupyterLab: drag vertices from the
# palette, connect them, edit their parameters (code fields see this notebook's names, such as
# `lines` and `tokenize`), and run. Everything on the canvas can also be done from Python,
# which is how the cell below lays out the same word count; in JupyterLab you can keep
# editing it by hand. (The builder is a separate component: where it is not installed, this
# section says so and is skipped.)

# %%
from IPython.display import display

try:
    from jetbench.notebook import DagBuilder
except ImportError:  # the builder widget is not part of this installation
    DagBuilder = None

if DagBuilder is None:
    print("DagBuilder is not available here: section skipped")
else:
    builder = DagBuilder()
    builder.add_vertex("items", "read", params={"items": "lines"}, parallelism=PARALLELISM)
    builder.add_vertex("flat_map", "split", params={"fn": "tokenize(x)"})
    builder.add_vertex("filter", "non-empty", params={"fn": "x != ''"})
    builder.add_vertex("accumulate_by_key", "accumulate", params={"key": "x", "op": "counting"})
    builder.add_vertex("combine_by_key", "combine", params={"op": "counting"})
    builder.add_vertex("collect", "sink", parallelism=1)
    builder.connect("read", "split")
    builder.connect("split", "non-empty")
    builder.connect("non-empty", "accumulate", routing="partitioned", key="x")
    builder.connect("accumulate", "combine", routing="partitioned", key="x[0]")
    builder.connect("combine", "sink")
    display(builder)

# %%
if DagBuilder is not None:
    assert builder.validate() == [], builder.validate()
    assert dict(run(builder.dag, cooperative_threads=THREADS)) == expected

# %% [markdown]
# From the canvas back to code: the builder's **Export code** button shows the Python that
# rebuilds the DAG drawn on the canvas, kept up to date while you edit, with a **Copy** button to
# paste it into a cell; `builder.to_code()` returns the same text. The code reads this notebook's
# names (`lines`, `tokenize`); run, it builds an equal DAG:

# %%
if DagBuilder is not None:
    code = builder.to_code()
    print(code)
    namespace = dict(globals())
    exec(code, namespace)  # what pasting the exported code into a cell does
    assert dict(run(namespace["dag"], cooperative_threads=THREADS)) == expected

# %% [markdown]
# Next: [02 · cooperative scheduling](02-cooperative-scheduling.ipynb) looks at how the
# tasklets share the worker threads.

"""In a real kernel with no front end (nbclient, as nbconvert runs notebooks): the dashboard's
sampler thread talks to a kernel comm nobody listens to, and plot_metrics gives a PNG figure."""

from __future__ import annotations

import nbformat
from nbclient import NotebookClient

CELLS = [
    """\
import threading
from jetbench import DAG, Edge, ExecutionService
from jetbench.processors import collect_sink, map_processor
from jetbench.processors.generator_source import generator_source

dag = DAG()
src = dag.new_vertex("source", generator_source(4000, timestamped=False, count=3200), local_parallelism=1)
work = dag.new_vertex("work", map_processor(lambda x: x + 1), local_parallelism=2)
out = dag.new_vertex("sink", collect_sink(), local_parallelism=1)
dag.edge(Edge.between(src, work)).edge(Edge.between(work, out))
job = ExecutionService(cooperative_threads=2).submit(dag, name="headless")
dash = job.dashboard(interval_s=0.05)
dash""",
    """\
result = job.join(10)
dash.join(5)
print("STATUS", dash.state["status"], dash.state["final"], len(result), dash.ticks > 3,
      [t.name for t in threading.enumerate() if t.name.startswith("jetbench.")])""",
    "job.plot_metrics()",
    "frame = job.metrics_frame(); print('FRAME', list(frame['vertex']))",
]


def test_dashboard_and_plots_in_a_kernel_without_front_end(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    widget, status, figure, frame = (cell.outputs for cell in nb.cells)
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in widget)
    assert "STATUS completed True 3200 True []" in "".join(o.get("text", "") for o in status)
    assert any("image/png" in o.get("data", {}) for o in figure)
    assert "FRAME ['source', 'work', 'work', 'sink']" in "".join(o.get("text", "") for o in frame)
    # the widget's last (final) state is what nbclient saves in the notebook's metadata
    states = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    saved = [s["state"] for s in states.values() if s["model_name"] == "AnyModel"]
    assert saved and '"final":true' in saved[0]["state"]

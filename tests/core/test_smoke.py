from jetbench import DAG, Edge
from jetbench.processors import collect_sink, items_source, map_processor


def test_source_map_sink(service):
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(10_000)))
    double = dag.new_vertex("double", map_processor(lambda x: 2 * x))
    sink = dag.new_vertex("sink", collect_sink())
    dag.edge(Edge.between(src, double)).edge(Edge.between(double, sink))
    assert sorted(service.submit(dag).join(timeout=30)) == [2 * x for x in range(10_000)]

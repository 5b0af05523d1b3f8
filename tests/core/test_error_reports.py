"""A job failure reads from the user's side: the JobError names the vertex and instance, the
user's function, file and line, and the item; fused transforms have real source lines; IPython
renders the short report first; a DAG error is raised without the engine's frames."""

from __future__ import annotations

import functools
import inspect
import linecache
import operator
import os
import traceback

import pytest

import jetbench
from jetbench import DAG, Edge, Pipeline, sinks, sources
from jetbench.core.errors import DagError, JobError
from jetbench.core.processor import Processor
from jetbench.processors import Transform, collect_sink, items_source

ENGINE_DIR = os.path.join(os.path.dirname(jetbench.__file__), "core")


def failure(p) -> JobError:
    with pytest.raises(JobError) as info:
        jetbench.run(p, timeout=30)
    return info.value


def test_a_failing_map_names_vertex_line_and_item():
    inverse = lambda x: 1 / x  # noqa: E731 - the user's function, on a line the report must name
    p = Pipeline()
    p.read_from(sources.items([1, 2, 0])).map(inverse).write_to(sinks.collect())
    err = failure(p)
    message = str(err)
    first = message.splitlines()[0]
    assert "vertex 'map' instance 0" in first and "ZeroDivisionError: division by zero" in first
    assert f"{__file__}:{inverse.__code__.co_firstlineno}" in message
    assert "inverse = lambda x: 1 / x" in message  # the source line
    assert "  item: 0" in message.splitlines()
    assert (err.vertex, err.instance, err.item, err.item_kind) == ("map", 0, 0, "item")
    assert err.user_frame is not None and err.user_frame.lineno == inverse.__code__.co_firstlineno
    assert isinstance(err.__cause__, ZeroDivisionError)  # the chain is kept


def test_the_item_of_a_fused_chain_is_its_input():
    """In map -> filter -> map, the report gives the item that entered the fused vertex."""

    def explode(y):
        if y == 30:
            raise ValueError("thirty")
        return y

    p = Pipeline()
    (p.read_from(sources.items([1, 2, 3, 4])).map(lambda x: x * 10).filter(lambda y: y > 10)
     .map(explode).write_to(sinks.collect()))
    err = failure(p)
    assert err.vertex.startswith("fused(") and err.item == 3 and err.item_kind == "item"
    assert err.user_frame is not None and err.user_frame.name == "explode"
    assert f"in explode, {__file__}:{explode.__code__.co_firstlineno + 2}" in str(err)
    assert 'raise ValueError("thirty")' in str(err)  # the line that raised, in the user's function


def test_a_flat_map_generator_failure_names_the_item():
    def words(line):
        yield from line.split()
        raise RuntimeError("bad line")

    p = Pipeline()
    p.read_from(sources.items(["a b", "c"])).flat_map(words).write_to(sinks.collect())
    err = failure(p)
    assert err.item == "a b" and err.item_kind == "item"
    assert err.user_frame is not None and err.user_frame.name == "words"


#: a function of one argument that is not a Python function, so not inlined: it stays a call
#: from the generated code (1 / x)
INVERSE = functools.partial(operator.truediv, 1)


def test_the_formatted_traceback_has_real_source_lines_for_fused_code():
    p = Pipeline()
    p.read_from(sources.items([1, 2, 0])).map(INVERSE).map(abs).write_to(sinks.collect())
    err = failure(p)
    text = "".join(traceback.format_exception(err))
    assert "Could not get source" not in text
    assert "lambda batch: [f1(f0(x0)) for x0 in batch]" in text  # the generated line, printed
    assert text.rstrip().splitlines()[-4].startswith("jetbench.core.errors.JobError: job ")


def test_an_inlined_step_fails_on_the_users_line():
    """Fused lambdas are inlined into the generated comprehension (`inlining`): a failure in
    one points at the user's line and expression, as a call would, and names the item."""
    p = Pipeline()
    line = inspect.currentframe().f_lineno + 1
    p.read_from(sources.items([1, 2, 0])).map(lambda x: 1 / x).map(lambda y: y + 1).write_to(sinks.collect())
    err = failure(p)
    assert err.item == 0 and err.item_kind == "item"
    assert err.user_frame is not None and (err.user_frame.filename, err.user_frame.lineno) == (__file__, line)
    text = "".join(traceback.format_exception(err.__cause__))
    assert ".map(lambda x: 1 / x)" in text and "lambda batch" not in text
    assert "~~^~~" in text  # the caret under the failing division, from the user's positions
    lines = err._render_traceback_()
    text = "\n".join(lines)
    assert f'File "{__file__}", line {line}, in <lambda>' in text and "<jetbench" not in text


def test_a_called_step_after_inlined_ones_is_the_users_frame():
    def explode(y):
        if y == 30:
            raise ValueError("thirty")
        return y

    p = Pipeline()
    p.read_from(sources.items([1, 2, 3])).map(lambda x: x * 10).map(explode).write_to(sinks.collect())
    err = failure(p)
    assert err.user_frame is not None and err.user_frame.name == "explode"
    assert err.item == 3


def test_ipython_shows_the_fused_code_too():
    tbtools = pytest.importorskip("IPython.core.ultratb")
    p = Pipeline()
    p.read_from(sources.items([0])).map(INVERSE).map(str).write_to(sinks.collect())
    err = failure(p)
    formatter = tbtools.AutoFormattedTB(mode="Context", theme_name="nocolor")
    cause = err.__cause__
    text = "\n".join(formatter.structured_traceback(type(cause), cause, cause.__traceback__))
    assert "Could not get source" not in text
    assert "lambda batch: [f1(f0(x0)) for x0 in batch]" in text


def test_generated_source_survives_linecache_checks():
    t = Transform().map(abs).filter(bool)
    filename = t._fn.__code__.co_filename
    assert filename.startswith("<jetbench fused transform map(abs), filter(bool) ")
    linecache.checkcache()
    assert linecache.getline(filename, 1).startswith("lambda batch: [")
    assert Transform().map(abs).filter(bool)._fn.__code__.co_filename == filename  # stable name


def test_render_traceback_starts_with_the_job_error_and_hides_engine_frames():
    p = Pipeline()
    p.read_from(sources.items([1, 2, 0])).map(lambda x: 1 / x).write_to(sinks.collect())
    err = failure(p)
    lines = err._render_traceback_()
    assert lines[0].startswith("jetbench.JobError: job ")
    assert "vertex 'map' instance 0" in lines[0]
    assert "  item: 0" in lines
    text = "\n".join(lines)
    assert ENGINE_DIR not in text and "<jetbench fused" not in text
    assert f'File "{__file__}"' in text  # the user's frame
    assert lines[-1] == "ZeroDivisionError: division by zero"


class FailsOnTwo(Processor):
    """An item-level processor that peeks, fails, and so leaves its items in the inbox."""

    def process(self, ordinal, inbox):
        while inbox:
            if inbox.peek() == 2:
                raise KeyError(2)
            self.outbox.offer(0, inbox.poll())


def test_a_processor_noting_no_item_reports_what_is_left_in_its_inbox():
    dag = DAG()
    src = dag.new_vertex("src", items_source([1, 2, 3]), 1)
    bad = dag.new_vertex("bad", FailsOnTwo, 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, bad)).edge(Edge.between(bad, out))
    err = failure(dag)
    assert err.item_kind == "inbox" and err.item == [2, 3]
    assert "left in its inbox (the failing item could not be pinpointed): [2, 3]" in str(err)
    assert err.user_frame is not None and err.user_frame.name == "process"
    assert err.user_frame.filename == __file__


def test_a_dag_error_from_submit_has_no_validation_frames():
    dag = DAG()
    a = dag.new_vertex("a", items_source([1]))
    b = dag.new_vertex("b", collect_sink(), 0)
    dag.edge(Edge.between(a, b))
    with pytest.raises(DagError) as info:
        jetbench.run(dag)
    err = info.value
    text = "".join(traceback.format_exception(err))
    assert "dag.py" not in text and "plan.py" not in text
    lines = err._render_traceback_()
    assert lines[-1] == "jetbench.DagError: vertex 'b': local_parallelism must be >= 1, got 0"
    assert ENGINE_DIR not in "\n".join(lines) and f'File "{__file__}"' in lines[1]

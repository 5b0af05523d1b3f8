"""Inlining one-expression functions into a fused chain's generated code (`inlining`,
`transform_chain`): what is inlined and what stays a call, and that an inlined chain computes
exactly what the same chain of calls computes, item for item, in every form of input."""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetbench.processors import Transform
from jetbench.processors.inlining import inline_expression
from jetbench.processors.transform_chain import _inlinable, generated_source, grouped_by


def called(t: Transform) -> Transform:
    """The same chain with every step wrapped so that none can be inlined."""
    wrapped = tuple((kind, functools.partial(lambda f, x: f(x), fn)) for kind, fn in t.steps)
    return Transform(wrapped, t.timestamped, t.keep_timestamps)


def test_a_lambda_and_a_one_return_def_are_inlined():
    def window_key(x: int) -> int:
        """A docstring does not count."""
        return x // 1000

    assert ast.unparse(inline_expression(window_key).applied_to("v")) == "v // 1000"
    assert ast.unparse(inline_expression(lambda w: w != "").expr) == "w != ''"


def two_statements(x):
    y = x + 1
    return y


def generator(x):
    yield x


@functools.lru_cache
def decorated(x):
    return x


@pytest.mark.parametrize("fn", [
    lambda x, y: x,  # two parameters
    lambda *xs: xs,
    lambda x, *, k=1: x,
    two_statements,
    generator,
    decorated,  # not a plain function
    abs,  # a builtin
    str.lower,
    functools.partial(max, 0),
    lambda x: [y for y in x],  # opens a scope of its own
    lambda x: (y := x) and y,
    lambda x: (lambda: x)(),
], ids=lambda fn: re.sub(r" at 0x[0-9a-f]+", "", repr(fn)))  # no address: pytest-xdist's workers must agree
def test_what_stays_a_call(fn):
    assert inline_expression(fn) is None


def test_a_function_without_source_stays_a_call():
    fn = eval("lambda x: x + 1")  # noqa: S307 - a function whose source no file holds
    assert inline_expression(fn) is None
    assert Transform().map(fn)([1, 2]) == [2, 3]


def test_source_that_no_longer_matches_the_code_is_not_trusted(tmp_path):
    path = tmp_path / "user_module.py"
    path.write_text("def f(x):\n    return x + 1\n")
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - a user module
    linecache.checkcache(str(path))
    path.write_text("def f(x):\n    return x - 1\n")  # edited after it was loaded
    linecache.checkcache(str(path))
    assert inline_expression(namespace["f"]) is None
    assert Transform().map(namespace["f"])([1]) == [2]  # what the code does, not the new source


def test_off_with_the_environment_variable(monkeypatch):
    monkeypatch.setenv("JETBENCH_INLINE", "0")
    assert inline_expression(lambda x: x + 1) is None
    assert "f0(x0)" in generated_source(Transform().map(lambda x: x + 1)._fn)


def test_closure_variables_and_globals_are_read_live():
    """The inlined code reads the function's own cell and globals: rebinding either after the
    chain was compiled changes what the chain computes, as it would for a call."""
    step = 10

    def add_step(x):
        return x + step + OFFSET

    t = Transform().map(add_step)
    assert "add_step" not in generated_source(t._fn)  # inlined
    assert t([1]) == [1 + 10 + OFFSET]
    step = 20  # noqa: F841 - read by add_step through its cell
    globals()["OFFSET"] = 1000
    try:
        assert t([1]) == [1 + 20 + 1000]
    finally:
        globals()["OFFSET"] = 100


OFFSET = 100
items = [7]  # a global whose name the generated code binds


def test_a_name_the_generated_code_binds_leaves_that_step_a_call():
    t = Transform().map(lambda x: x in items).map(lambda y: not y)
    assert list(_inlinable(t.steps)) == [1]
    assert t([7, 8]) == [False, True]


def test_steps_reading_one_name_differently_are_not_inlined_together():
    def adder(n):
        return lambda x: x + n

    t = Transform().map(adder(1)).map(adder(10))  # two cells both named n
    assert list(_inlinable(t.steps)) == [0]
    assert t([0]) == [11]


def test_a_filter_is_called_once_per_item_in_order_and_only_on_what_passed():
    seen = []
    t = Transform().filter(lambda x: x > 1).filter(lambda x: seen.append(x) or True).map(lambda x: -x)
    assert t([1, 2, 3]) == [-2, -3] and seen == [2, 3]


STEPS = [
    ("map", lambda x: x + 1),
    ("map", lambda x: 3 * x),
    ("map", lambda x: (x, -x)),
    ("map", lambda x: x[0] if isinstance(x, tuple) else x),
    ("filter", lambda x: not isinstance(x, int) or x % 2 == 0),
    ("filter", lambda x: x),
    ("flat_map", lambda x: [x, x] if isinstance(x, int) and x % 3 else [x]),
    ("flat_map", lambda x: x if isinstance(x, tuple) else ()),
]


def outcome(fn, *args):
    """What ``fn(*args)`` returns, or the type and message of what it raises."""
    try:
        return "returned", fn(*args)
    except Exception as exc:
        return "raised", type(exc), str(exc)


@given(chosen=st.lists(st.integers(0, len(STEPS) - 1), max_size=5), items=st.lists(st.integers(-9, 30), max_size=20),
       timestamped=st.booleans(), keep=st.booleans())
def test_an_inlined_chain_computes_what_the_called_chain_computes(chosen, items, timestamped, keep):
    t = Transform(tuple(STEPS[i] for i in chosen), timestamped, keep)
    if chosen:
        assert _inlinable(t.steps)  # these lambdas are all inlined
    reference = called(t)
    if timestamped:
        ts = [100 + i for i in range(len(items))]
        pairs = list(zip(ts, items, strict=True))
        assert outcome(t, pairs) == outcome(reference, pairs)
        assert outcome(t.columns_fn(), list(ts), list(items)) == outcome(reference.columns_fn(), list(ts), list(items))
    else:
        assert outcome(t, items) == outcome(reference, items)
        assert outcome(t.items_fn(), items) == outcome(reference.items_fn(), items)


@given(items=st.lists(st.one_of(st.integers(), st.text(max_size=3), st.none()), max_size=20))
def test_an_exception_from_an_inlined_step_is_the_same_exception(items):
    t = Transform().map(lambda x: x + 1)
    assert outcome(t, items) == outcome(called(t), items)


def test_an_identity_map_is_no_step_at_all(monkeypatch):
    def identity(x):
        return x

    items = [1, 2]
    t = Transform(timestamped=True).map(identity).map(lambda y: y)
    assert t.items_fn()(items) is items  # the very list: nothing to compute
    assert t.columns_fn()([5, 6], items) == ([5, 6], items)
    assert "f0" not in generated_source(Transform().map(identity).filter(bool)._fn).split("if")[0]
    monkeypatch.setenv("JETBENCH_INLINE", "0")  # off: the steps are called as written
    seen = []
    t = Transform().map(lambda x: seen.append(x) or x).map(identity)
    assert t([3]) == [3] and seen == [3]
    assert Transform(timestamped=True).map(identity).items_fn()(items) is not items


@given(items=st.lists(st.integers(-20, 20), max_size=40), pairs=st.booleans())
def test_grouped_by_groups_as_a_plain_loop_does(items, pairs):
    batch = [(100 + i, x) for i, x in enumerate(items)] if pairs else items
    expected: dict = {}
    for entry in batch:
        expected.setdefault((entry[1] if pairs else entry) % 3, []).append(entry)
    inlined = grouped_by(lambda x: x % 3, pairs=pairs)
    called_ = grouped_by(functools.partial(lambda m, x: x % m, 3), pairs=pairs)
    for group in (inlined, called_):
        got = group(batch)
        assert got == expected and list(got) == list(expected)  # keys in the order first seen
    assert "x0 % 3" in generated_source(inlined)


def test_generated_code_does_not_read_the_users_builtins_names(tmp_path):
    """Inlined code runs in the user's globals: a module that names something ``list`` or
    ``zip`` does not change what the generated code calls."""
    path = tmp_path / "shadowing.py"
    path.write_text("list = zip = None\nkey = lambda x: x % 2\nkeep = lambda x: x > 0\nflat = lambda x: [x, x]\n")
    namespace: dict = {"__name__": "shadowing"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - a user module
    assert inline_expression(namespace["key"]) is not None
    assert dict(grouped_by(namespace["key"])([1, 2, 3])) == {1: [1, 3], 0: [2]}
    columns = Transform(timestamped=True).filter(namespace["keep"]).map(namespace["key"]).columns_fn()
    assert columns([5, 6, 7], [-1, 2, 3]) == ([6, 7], [0, 1])
    columns = Transform(timestamped=True).flat_map(namespace["flat"]).columns_fn()
    assert columns([5], [1]) == ([5, 5], [1, 1])


def test_an_inlined_expression_is_copied_without_what_tracebacks_attach_to_the_tree():
    """IPython's tracebacks (the ``executing`` package) set ``parent`` on every node of a file
    they show, the operator and context nodes the parser shares between all trees included: the
    copy an inlined step makes must not drag that other file's tree along (it made every fused
    chain built after a traceback copy whole modules)."""
    other = ast.parse(inspect.getsource(ast))  # a big module, as a notebook's traceback shows one
    marked = []
    for node in ast.walk(other):
        for child in ast.iter_child_nodes(node):
            child.parent = node
            marked.append(child)
    try:
        step = inline_expression(lambda x: -x % 2 == 0)
        assert hasattr(step.expr.ops[0], "parent")  # ast.Eq(): one node the parser shares
        copied = step.applied_to("x0")
        assert ast.unparse(copied) == "-x0 % 2 == 0"
        assert not [n for n in ast.walk(copied) if hasattr(n, "parent")]
        assert Transform().map(lambda x: -x % 2 == 0)([3, 4]) == [False, True]
    finally:
        for node in marked:
            node.__dict__.pop("parent", None)

"""Aggregate operations for ``Stage.aggregate`` and ``group_by(...).aggregate``.

Each is a factory, called as Jet's ``AggregateOperations`` are: ``counting()``, ``summing(fn)``,
``to_list()``. Passing the bare factory where an operation is expected is refused, naming the
call to make.

>>> from jetbench import aggregate
>>> op = aggregate.all_of(aggregate.counting(), aggregate.averaging())
>>> acc = op.create()
>>> for x in [1, 2, 6]:
...     acc = op.accumulate(acc, x)
>>> op.finish(acc)
(3, 3.0)
"""

from .processors.aggregate_operation import (
    AggregateOperation,
    all_of,
    averaging,
    counting,
    max_by,
    min_by,
    summing,
    to_list,
    to_set,
    top_n,
)

__all__ = [
    "AggregateOperation",
    "all_of",
    "averaging",
    "counting",
    "max_by",
    "min_by",
    "summing",
    "to_list",
    "to_set",
    "top_n",
]

"""Jet's hash join with join clauses in plain Python: the model the processor's and the pipeline's
tests compare with."""

from __future__ import annotations

from itertools import product


def hash_join_model(probe, builds, clauses, how, map_to_output=None):
    """Per probe item, every combination of one match per build side (its clause's projection),
    None for a side without match (``how="left"``) or the item dropped (``"inner"``); each
    ``(item, *matches)`` or ``map_to_output(item, *matches)``, None dropped."""
    out = []
    for left in probe:
        matches = [[c.project(r) for r in build if c.right_key(r) == c.left_key(left)] or
                   ([None] if how == "left" else []) for build, c in zip(builds, clauses, strict=True)]
        for combo in product(*matches):
            result = (left, *combo) if map_to_output is None else map_to_output(left, *combo)
            if result is not None:
                out.append(result)
    return out

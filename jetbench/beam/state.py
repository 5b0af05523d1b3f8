"""A stage instance's state servicer (what the SDK harness reads and writes user state and side
inputs through) whose contents can be saved in a snapshot and put back.

Beam's `StateServicer` keeps, per serialized ``StateKey``, the list of encoded values appended
(and, for ordered-list state, the sort keys present); both are plain bytes and ints, which is
what `dump` returns and `load` takes. Only between bundles: inside one, the servicer may hold a
copy-on-write overlay.

>>> from apache_beam.portability.api import beam_fn_api_pb2
>>> state = SnapshotStateServicer()
>>> key = beam_fn_api_pb2.StateKey(runner=beam_fn_api_pb2.StateKey.Runner(key=b"k"))
>>> _ = state.append_raw(key, b"v1"); _ = state.append_raw(key, b"v2")
>>> other = SnapshotStateServicer()
>>> other.load(state.dump())
>>> other.get_raw(key)
(b'v1v2', None)
"""

from __future__ import annotations

from typing import Any

from apache_beam.runners.portability.fn_api_runner import worker_handlers

from .errors import BeamRunnerError

__all__ = ["SnapshotStateServicer", "StateDump"]

#: (serialized state key -> encoded values, serialized ordered-list key -> sort keys present)
StateDump = tuple[dict[bytes, list[bytes]], dict[bytes, list[int]]]


class SnapshotStateServicer(worker_handlers.StateServicer):  # type: ignore[misc]
    """Beam's in-memory state servicer, with `dump` and `load` for snapshots."""

    def dump(self) -> StateDump:
        """A copy of everything stored (empty lists, left by cleared state, are dropped)."""
        with self._lock:
            if self._checkpoint is not None or not isinstance(self._state, dict):
                raise BeamRunnerError("a stage's state was saved in the middle of a bundle")
            values = {key: list(items) for key, items in self._state.items() if items}
            ordered = {key: list(keys) for key, keys in self._ordered_list_keys.items() if keys}
        return values, ordered

    def load(self, dump: StateDump) -> None:
        """Add a `dump` to what is stored (a restore, before any bundle)."""
        values, ordered = dump
        with self._lock:
            state: Any = self._state
            for key, items in values.items():
                state[key].extend(items)
            for key, keys in ordered.items():
                self._ordered_list_keys[key].update(keys)



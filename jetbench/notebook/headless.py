"""Widgets without a front end: a comm that serialises and records what a kernel would send.

With no kernel, ipywidgets gives each widget a ``DummyComm`` that drops messages unseen. The
benchmark and the tests want the real cost and the real traffic: `RecordingComm` serialises
every message to JSON as the kernel's session would, and keeps count of messages and bytes.

>>> with recording_comms() as comms:
...     pass
>>> comms
[]
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Any

import comm
from comm import DummyComm


class RecordingComm(DummyComm):
    """Serialises each message to JSON (as ``jupyter_client.Session`` does) and counts it."""

    def __init__(self, *args: Any, keep: bool = False, **kwargs: Any):
        self.keep = keep
        self.messages: list[dict[str, Any]] = []
        self.count = 0  # messages after the comm_open (state updates)
        self.bytes = 0
        self.open_bytes = 0
        self.max_bytes = 0
        self.updates: dict[str, int] = {}
        self._lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None,
                    **keys: Any) -> None:
        size = len(json.dumps(data, separators=(",", ":"), default=str))
        with self._lock:
            if msg_type == "comm_open":  # the widget's code and first state, once
                self.open_bytes = size
            else:
                self.count += 1
                self.bytes += size
                self.max_bytes = max(self.max_bytes, size)
            if isinstance(data, dict) and data.get("method") == "update":
                for key in data.get("state", {}):
                    self.updates[key] = self.updates.get(key, 0) + 1
            if self.keep:
                self.messages.append({"msg_type": msg_type, "data": data, "size": size})


@contextlib.contextmanager
def recording_comms(keep: bool = False) -> Iterator[list[RecordingComm]]:
    """Within the block, widgets created get a `RecordingComm` (listed in the yielded list)."""
    created: list[RecordingComm] = []
    previous = comm.create_comm

    def create(*args: Any, **kwargs: Any) -> RecordingComm:
        c = RecordingComm(*args, keep=keep, **kwargs)
        created.append(c)
        return c

    comm.create_comm = create
    try:
        yield created
    finally:
        comm.create_comm = previous

"""Side inputs into a stage's state servicer, under the state keys Beam's SDK harness asks for.

A side input arrives as chunks of its PCollection; `WindowGroupingBuffer` (Beam's) groups them
per window (and per key for a multimap); here they are stored as the access pattern reads them:
an iterable per window, or per window the values of each key, the keys, and the key/values.
"""

from __future__ import annotations

import struct
from typing import Any

from apache_beam.portability import common_urns
from apache_beam.portability.api import beam_fn_api_pb2, beam_runner_api_pb2

from .errors import UnsupportedBeamFeature

__all__ = ["commit_side_input"]


def commit_side_input(state: Any, transform_id: str, tag: str, access_pattern: beam_runner_api_pb2.FunctionSpec,
                      grouped: Any) -> None:
    """Store ``grouped`` (a filled `WindowGroupingBuffer`) as side input ``tag`` of ``transform_id``."""
    Key = beam_fn_api_pb2.StateKey
    if access_pattern.urn == common_urns.side_inputs.ITERABLE.urn:
        for _, window, values, _ in grouped.encoded_items():
            state.append_raw(Key(iterable_side_input=Key.IterableSideInput(
                transform_id=transform_id, side_input_id=tag, window=window)), values)
    elif access_pattern.urn == common_urns.side_inputs.MULTIMAP.urn:
        for key, window, values, count in grouped.encoded_items():
            state.append_raw(Key(multimap_side_input=Key.MultimapSideInput(
                transform_id=transform_id, side_input_id=tag, window=window, key=key)), values)
            state.append_raw(Key(multimap_keys_side_input=Key.MultimapKeysSideInput(
                transform_id=transform_id, side_input_id=tag, window=window)), key)
            # a KV<key, Iterable<value>>: the key, the count as a big-endian int, the values
            state.append_raw(Key(multimap_keys_values_side_input=Key.MultimapKeysValuesSideInput(
                transform_id=transform_id, side_input_id=tag, window=window)),
                key + struct.pack(">i", count) + values)
    else:
        raise UnsupportedBeamFeature(f"side input {tag!r} of Beam step {transform_id!r}: access pattern "
                                     f"{access_pattern.urn!r} is not supported (iterable and multimap are)")

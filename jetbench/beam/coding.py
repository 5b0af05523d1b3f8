"""How Beam elements travel on jetbench edges: encoded bytes, but for the elements a grouping takes.

An item on an edge is a chunk of elements encoded back to back with the PCollection's windowed
coder (what a bundle reads and writes on its data channel). An edge into a keyed stage carries
one ``(key bytes, element bytes)`` pair per element instead, so that a partitioned edge routes
equal keys, compared as their deterministic encoding, to the same instance; an edge into a
grouping vertex ``(key bytes, decoded element)`` pairs (the split decodes each element to find
its key; the grouping would only decode it again).

>>> import apache_beam as beam
>>> from apache_beam.coders import coders, WindowedValueCoder
>>> from apache_beam.utils.windowed_value import WindowedValue
>>> coder = WindowedValueCoder(coders.TupleCoder([coders.StrUtf8Coder(), coders.VarIntCoder()]))
>>> chunk = encode_all([WindowedValue(("a", 1), 0, ()), WindowedValue(("b", 2), 0, ())], coder)
>>> [k for k, _ in KeyedSplitter(coder).split(chunk)]
[b'a', b'b']
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from apache_beam.coders.coder_impl import create_InputStream, create_OutputStream
from apache_beam.portability import common_urns
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.runners import pipeline_context

__all__ = ["PipelineCoders", "ElementSplitter", "KeyedSplitter", "decode_all", "encode_all", "encode_chunks", "sequence_of", "stable_key",
           "stable_key_of"]


def decode_all(chunk: bytes, coder: Any) -> Iterator[Any]:
    """The elements encoded back to back (nested) in ``chunk``."""
    impl = coder.get_impl()
    stream = create_InputStream(chunk)
    while stream.size() > 0:
        yield impl.decode_from_stream(stream, True)


def encode_all(elements: Iterable[Any], coder: Any) -> bytes:
    """``elements`` encoded back to back (nested) in one chunk."""
    impl = coder.get_impl()
    stream = create_OutputStream()
    for element in elements:
        impl.encode_to_stream(element, stream, True)
    return stream.get()


def encode_chunks(elements: Iterable[Any], coder: Any, chunk_size: int = 256) -> Iterator[bytes]:
    """``elements`` encoded in chunks of at most ``chunk_size`` elements."""
    impl = coder.get_impl()
    stream = create_OutputStream()
    count = 0
    for element in elements:
        impl.encode_to_stream(element, stream, True)
        count += 1
        if count == chunk_size:
            yield stream.get()
            stream = create_OutputStream()
            count = 0
    if count:
        yield stream.get()


def stable_key(key: bytes) -> int:
    """The key bytes as a small int that is the same in every process (CRC-32), unlike
    ``hash(bytes)``, which each process salts: a partitioned edge keyed on it, and the snapshot
    entries saved under it, send a key to the same instance in a new process that resumes the job.

    >>> stable_key(b"a"), hash(stable_key(b"a")) == stable_key(b"a")
    (3904355907, True)
    """
    return zlib.crc32(key)


def stable_key_of(pair: tuple[bytes, Any]) -> int:
    """`stable_key` of a keyed pair's key bytes (the key function of a partitioned edge in a job
    with a processing guarantee)."""
    return zlib.crc32(pair[0])


class KeyedSplitter:
    """Splits a chunk of encoded ``WindowedValue((key, value))`` into ``(key bytes, element
    bytes)`` pairs: the element's own bytes, cut from the chunk without re-encoding. With
    ``decoded`` (towards a GroupByKey, which groups decoded elements), the pair holds the
    ``WindowedValue`` the split had to decode anyway rather than its bytes: decoded once, not twice.

    >>> from apache_beam.coders import coders, WindowedValueCoder
    >>> from apache_beam.utils.windowed_value import WindowedValue
    >>> coder = WindowedValueCoder(coders.TupleCoder([coders.StrUtf8Coder(), coders.VarIntCoder()]))
    >>> chunk = encode_all([WindowedValue(("a", 1), 0, ())], coder)
    >>> [(k, wv.value) for k, wv in KeyedSplitter(coder, decoded=True).split(chunk)]
    [(b'a', ('a', 1))]
    """

    def __init__(self, windowed_coder: Any, decoded: bool = False):
        self._impl = windowed_coder.get_impl()
        self._key_impl = windowed_coder.wrapped_value_coder.key_coder().get_impl()
        self.decoded = decoded

    def split(self, chunk: bytes) -> list[tuple[bytes, Any]]:
        stream = create_InputStream(chunk)
        decode, encode_key = self._impl.decode_from_stream, self._key_impl.encode
        pairs: list[tuple[bytes, Any]] = []
        if self.decoded:
            while stream.size() > 0:
                element = decode(stream, True)
                pairs.append((encode_key(element.value[0]), element))
            return pairs
        total = len(chunk)
        start = 0
        while stream.size() > 0:
            element = decode(stream, True)
            end = total - stream.size()
            pairs.append((encode_key(element.value[0]), chunk[start:end]))
            start = end
        return pairs


class ElementSplitter:
    """Splits a chunk of encoded elements into ``(sequence number, element bytes)`` pairs, one
    per element (its bytes cut from the chunk, not re-encoded), numbered in the order they are
    split: an edge partitioned on the number (`sequence_of`) deals the elements out to its
    consumer's instances in turn (a splittable DoFn's restrictions, run in worker processes).

    >>> from apache_beam.coders import coders, WindowedValueCoder
    >>> from apache_beam.utils.windowed_value import WindowedValue
    >>> coder = WindowedValueCoder(coders.VarIntCoder())
    >>> chunk = encode_all([WindowedValue(1, 0, ()), WindowedValue(300, 0, ())], coder)
    >>> [(n, list(decode_all(c, coder))[0].value) for n, c in ElementSplitter(coder).split(chunk)]
    [(0, 1), (1, 300)]
    """

    def __init__(self, windowed_coder: Any):
        self._impl = windowed_coder.get_impl()
        self._next = 0

    def split(self, chunk: bytes) -> list[tuple[int, bytes]]:
        stream = create_InputStream(chunk)
        decode = self._impl.decode_from_stream
        total, start = len(chunk), 0
        pieces: list[tuple[int, bytes]] = []
        while stream.size() > 0:
            decode(stream, True)
            end = total - stream.size()
            pieces.append((self._next, chunk[start:end]))
            self._next += 1
            start = end
        return pieces


def sequence_of(pair: tuple[int, bytes]) -> int:
    """The sequence number of an `ElementSplitter` pair (a partitioned edge's key function:
    ``hash(n) == n``, so consecutive numbers go to consecutive instances)."""
    return pair[0]


class PipelineCoders:
    """The coders of an optimized pipeline: each PCollection's windowed coder (added to the
    pipeline's components, as data channels need an id for it) and the Python objects behind ids."""

    def __init__(self, pipeline: beam_runner_api_pb2.Pipeline):
        self.pipeline = pipeline
        self._windowed_ids: dict[tuple[str, str], str] = {}
        components = pipeline.components
        for pcoll_id in list(components.pcollections):
            self.windowed_coder_id(pcoll_id)
        self.context = pipeline_context.PipelineContext(components)

    def windowed_coder_id(self, pcoll_id: str) -> str:
        components = self.pipeline.components
        pcoll = components.pcollections[pcoll_id]
        window_coder_id = components.windowing_strategies[pcoll.windowing_strategy_id].window_coder_id
        key = (pcoll.coder_id, window_coder_id)
        if key not in self._windowed_ids:
            coder_id = f"jetbench_windowed_coder_{len(self._windowed_ids) + 1}"
            while coder_id in components.coders:
                coder_id += "_"
            components.coders[coder_id].CopyFrom(beam_runner_api_pb2.Coder(
                spec=beam_runner_api_pb2.FunctionSpec(urn=common_urns.coders.WINDOWED_VALUE.urn),
                component_coder_ids=[pcoll.coder_id, window_coder_id]))
            self._windowed_ids[key] = coder_id
        return self._windowed_ids[key]

    def windowed_coder(self, pcoll_id: str) -> Any:
        return self.context.coders.get_by_id(self.windowed_coder_id(pcoll_id))

    def coder(self, coder_id: str) -> Any:
        return self.context.coders.get_by_id(coder_id)

    def windowing(self, pcoll_id: str) -> Any:
        """The `apache_beam.transforms.core.Windowing` of a PCollection."""
        strategy_id = self.pipeline.components.pcollections[pcoll_id].windowing_strategy_id
        return self.context.windowing_strategies.get_by_id(strategy_id)

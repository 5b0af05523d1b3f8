"""The child process of the Kafka SIGKILL test (`test_kafka_kill.py`): a paced job from a
3-partition topic through a map into another topic, resumed from its store (``resume=True``).

    python kill_child.py BOOTSTRAP IN OUT STORE GUARANTEE MODE

``MODE`` says when the process dies with SIGKILL (never, under ``none``):

* ``random``: when the parent sends SIGUSR1 (at a random time), at the first moment after it when
  no transaction of the sink is open (under at-least-once, where there is none: at once);
* ``after-commit``: right after the sink committed its second transaction of this process;
* ``before-commit``: at the start of the second phase 2 of this process, the snapshot stored and
  its records not yet committed.

In every mode the process dies while no instance of the sink has a transaction open: the Tansu
broker shows the records of a transaction aborted by fencing to ``read_committed`` readers (a
defect of that broker; Kafka hides them), so a kill inside a transaction would show them there.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from jetbench import ExecutionService, Pipeline, sinks, sources
from jetbench.core.job_config import JobConfig
from jetbench.kafka import sink as kafka_sink

#: seconds the map spends per record (paces the job: a few seconds for the test's records)
PACE = 0.0004


def transform(kv):
    time.sleep(PACE)
    key, value = kv
    return f"{key}:{value}:{int(value) * 3}"


def pipeline(bootstrap: str, topic_in: str, topic_out: str) -> Pipeline:
    p = Pipeline()
    (p.read_from(sources.kafka(topic_in, bootstrap, key_deserializer=bytes.decode, value_deserializer=bytes.decode,
                               bounded=True))
     .set_local_parallelism(2)
     .map(transform)
     .write_to(sinks.kafka(topic_out, bootstrap, key_fn=lambda s: s.split(":")[0], value_fn=lambda s: s)))
    return p


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def arm(mode: str) -> None:
    txn_lock = threading.Lock()
    original_transact = kafka_sink.KafkaSinkP._transact
    original_finish = kafka_sink.KafkaSinkP.snapshot_commit_finish
    commits = [0]
    finishes = [0]

    def transact(self, epoch, records):
        with txn_lock:
            original_transact(self, epoch, records)
            if records:
                commits[0] += 1
                if mode == "after-commit" and commits[0] == 2:
                    die()

    def finish(self, success):
        if success and self._pending and any(records for _, records in self._pending):
            finishes[0] += 1
            if mode == "before-commit" and finishes[0] == 2:
                txn_lock.acquire()  # not while another instance's transaction is open (see above)
                die()
        return original_finish(self, success)

    kafka_sink.KafkaSinkP._transact = transact
    kafka_sink.KafkaSinkP.snapshot_commit_finish = finish
    if mode == "random":
        def on_usr1(signum, frame):
            threading.Thread(target=lambda: (txn_lock.acquire(), die()), daemon=True).start()
        signal.signal(signal.SIGUSR1, on_usr1)


def main() -> None:
    bootstrap, topic_in, topic_out, store, guarantee, mode = sys.argv[1:7]
    arm(mode)
    config = JobConfig(guarantee, snapshot_interval_ms=100, snapshot_store=store, resume=True)
    job = ExecutionService(cooperative_threads=2).submit(pipeline(bootstrap, topic_in, topic_out), name="kafka-killed",
                                                         config=config)
    print("running", job.restored_from, flush=True)
    job.join(180)
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # a request that comes as the process ends is too late
    print("done", flush=True)


if __name__ == "__main__":
    main()

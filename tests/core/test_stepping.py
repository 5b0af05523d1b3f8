"""Step mode (issue 34): a job on the mock clock run one round at a time, on its real worker threads.

Each test walks through one situation of Jet's state machine the way a notebook does: an outbox
refusing because the queue downstream is full, a watermark crossing a window's end, the backoff
doubling from the idle floor while the clock moves only by the parks, a snapshot barrier being
aligned. No test reads the real time.
"""

from __future__ import annotations

import threading

import pytest

from jetbench import DAG, Edge, ExecutionService, JetbenchError, MockClock, Processor
from jetbench.core.errors import JobCancelled
from jetbench.core.idle import IdleConfig
from jetbench.core.items import Watermark
from jetbench.core.job_config import JobConfig
from jetbench.processors import collect_sink, items_source


def stepping(**kwargs) -> ExecutionService:
    kwargs.setdefault("cooperative_threads", 1)
    return ExecutionService(step=True, clock=MockClock(start=1.0), **kwargs)


def job_threads(job) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(f"jetbench.{job.name}.")]


class OneAtATime(Processor):
    """Takes one item of its inbox per call (the rest stays for the next calls)."""

    def process(self, ordinal, inbox):
        for x in inbox.take(1):
            self.outbox.offer(x)


class Idle(Processor):
    """A source with nothing to emit yet: it never makes progress and never finishes."""

    def complete(self):
        return False


class Ticks(Processor):
    """Emits ``n`` items, 5, 15, 25 ..., each followed by the watermark of its end (10, 20, 30 ...)."""

    def __init__(self, n: int):
        self.n = n
        self.k = 0
        self.watermark_next = False

    def complete(self):
        if self.k >= self.n and not self.watermark_next:
            return True
        if self.watermark_next:
            if self.outbox.offer(Watermark(10 * self.k)):
                self.watermark_next = False
        elif self.outbox.offer(10 * self.k + 5):
            self.k += 1
            self.watermark_next = True
        return False


class Windows(Processor):
    """Counts items per window of 20; a window is emitted as ``(start, count)`` when the watermark passes its end."""

    def __init__(self):
        self.counts: dict[int, int] = {}

    def process(self, ordinal, inbox):
        for x in inbox.take():
            self.counts[x // 20 * 20] = self.counts.get(x // 20 * 20, 0) + 1

    def try_process_watermark(self, watermark):
        for start in sorted(s for s in self.counts if s + 20 <= watermark.timestamp):
            self.outbox.offer((start, self.counts.pop(start)))
        return True


def test_nothing_runs_before_the_first_step_and_join_runs_the_rest_freely():
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(10)), 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, out))
    job = stepping().submit(dag)
    assert job_threads(job) == []  # not started yet
    first = job.step()
    assert [(r.tasklet, r.did) for r in first.calls] == [("src#0", "init"), ("out#0", "init")]
    assert first.number == 1 and first.parks == []
    second = job.step()
    assert second.row("src#0").did == "progress" and second.row("src#0").items_out == 10
    assert second.row("out#0").items_in == 10
    assert "step 2 of job" in repr(second) and "src#0" in repr(second)
    html = second._repr_html_()
    assert '<tr data-kind="call" data-did="progress"' in html and "<th>state after</th>" in html
    assert sorted(job.join()) == list(range(10))
    assert job_threads(job) == []
    with pytest.raises(JetbenchError, match=r"job.step\(\): job .* has ended \(completed\)"):
        job.step()


def test_step_on_a_job_not_in_step_mode_says_how_to_get_one():
    dag = DAG()
    dag.new_vertex("src", items_source(range(3)), 1)
    job = ExecutionService().submit(dag)
    job.join()
    with pytest.raises(JetbenchError, match=r"not submitted in step mode; submit it on ExecutionService\(step=True"):
        job.step()
    with pytest.raises(JetbenchError, match="step must be True or False"):
        ExecutionService(step="yes")


def test_cancel_before_the_first_step_leaves_no_thread():
    dag = DAG()
    src = dag.new_vertex("idle", Idle, 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, out))
    job = stepping().submit(dag)
    job.cancel()
    with pytest.raises(JobCancelled):
        job.join(timeout=30)
    assert job_threads(job) == []


def test_an_outbox_refuses_while_the_queue_downstream_is_full():
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(20)), 1)
    slow = dag.new_vertex("slow", OneAtATime, 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, slow).queue_size(4)).edge(Edge.between(slow, out))
    job = stepping(outbox_capacity=4).submit(dag)
    reports = [job.step() for _ in range(12)]
    src_rows = [r.row("src#0") for r in reports[1:]]
    refused = [k for k, row in enumerate(src_rows) if row.did == "no progress" and row.outbox_full]
    assert refused, [(row.did, row.outbox_full) for row in src_rows]
    k = refused[0]
    # while the source is refused, the slow vertex goes on taking one item a round
    assert reports[k + 1].row("slow#0").did == "progress" and reports[k + 1].row("slow#0").items_out == 1
    # once the slow vertex drained the queue, the source's flush moves again
    assert any(row.did == "progress" for row in src_rows[k + 1:])
    assert sorted(job.join()) == list(range(20))


def test_a_watermark_crossing_a_windows_end_emits_it_in_that_round():
    dag = DAG()
    ticks = dag.new_vertex("ticks", lambda: Ticks(6), 1)
    windows = dag.new_vertex("windows", Windows, 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(ticks, windows)).edge(Edge.between(windows, out))
    job = stepping().submit(dag)
    seen = []
    for _ in range(60):
        if all(t.is_done for t in job.tasklets):
            break
        report = job.step()
        if any(r.tasklet == "windows#0" for r in report.calls):
            row = report.row("windows#0")
            seen.append((row.watermark, row.items_out))
    # the watermark moves 10, 20, 30 ...; the window [0, 20) is emitted once it has reached 20
    # (in that round, or the next: the tasklet processes the items before it first), not before
    marks = [w for w, _ in seen if w is not None]
    assert marks == sorted(marks) and {10, 20, 30, 40, 50, 60} <= set(marks), seen
    crossing = next(k for k, (w, _) in enumerate(seen) if w is not None and w >= 20)
    emitted = next(k for k, (_, n) in enumerate(seen) if n)
    assert crossing <= emitted <= crossing + 1 and seen[emitted][1] == 1, seen
    assert sorted(job.join()) == [(0, 2), (20, 2), (40, 2)]


def test_the_backoff_doubles_from_the_idle_floor_while_the_clock_moves_only_by_the_parks():
    dag = DAG()
    src = dag.new_vertex("idle", Idle, 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, out))
    service = stepping(min_idle_us=25, max_idle_us=500)
    job = service.submit(dag)
    first = job.step()  # init: a productive round, no park
    assert first.parks == []
    start = first.clock_ns
    reports = [job.step() for _ in range(8)]
    asked = [r.parks[0].asked_ns for r in reports]
    assert asked == [IdleConfig(25, 500).park_ns(n) for n in range(1, 9)]
    assert [a // 1000 for a in asked] == [25, 50, 100, 200, 400, 500, 500, 500]
    assert [r.parks[0].idle_round for r in reports] == list(range(1, 9))
    assert all(r.calls and all(c.did == "no progress" for c in r.calls) for r in reports)
    # the mock clock stands still but for the parks: each slept exactly what it asked
    assert all(r.parks[0].slept_ns == r.parks[0].asked_ns for r in reports)
    assert reports[-1].clock_ns - start == sum(asked)
    job.cancel()
    with pytest.raises(JobCancelled):
        job.join(timeout=30)
    assert job_threads(job) == []


class Emits(Processor):
    """Emits ``n`` items, ``per_call`` a call, then stays (no progress) until the job ends."""

    def __init__(self, n: int, per_call: int, base: int):
        self.n = n
        self.per_call = per_call
        self.base = base
        self.sent = 0
        self.offset = 0

    def complete(self):
        for _ in range(self.per_call):
            if self.sent >= self.n or not self.outbox.offer(self.base + self.sent):
                break
            self.sent += 1
        return False

    def save_to_snapshot(self):
        return True


def test_a_snapshot_barrier_is_aligned_round_by_round(tmp_path):
    """A trickle (3 items) and a flood (300) into a vertex taking 2 items a round: after the
    snapshot is asked for, the trickle's barrier reaches it first and is held (exactly-once
    aligns) while the flood's waits behind the items in its queue; the vertex saves its state
    only when both have come."""
    config = JobConfig("exactly_once", snapshot_interval_ms=3_600_000, snapshot_store=tmp_path / "s.sqlite")
    dag = DAG()
    trickle = dag.new_vertex("trickle", lambda: Emits(3, 1, 0), 1)
    flood = dag.new_vertex("flood", lambda: Emits(300, 8, 1000), 1)
    slow = dag.new_vertex("slow", OneAtATime, 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.from_(trickle).to(slow, 0)).edge(Edge.from_(flood).to(slow, 1).queue_size(32))
    dag.edge(Edge.between(slow, out))
    job = stepping(outbox_capacity=8).submit(dag, config=config)
    for _ in range(10):
        job.step()
    snapshot_id = job.request_snapshot()
    assert snapshot_id == 1
    words, trickle_words = [], []
    for _ in range(400):
        report = job.step()
        words.append(report.row("slow#0").snapshot)
        trickle_words.append(report.row("trickle#0").snapshot)
        if "aligning #1" in words and words[-1] != "aligning #1":
            break
    aligning = [k for k, w in enumerate(words) if w == "aligning #1"]
    assert len(aligning) >= 3, words  # held for several rounds while the flood's queue drains
    assert aligning == list(range(aligning[0], aligning[-1] + 1)), words  # one stretch
    # then it saves its state (or is through its snapshot already within the round)
    assert words[-1] in ("saving #1", "emitting barrier #1", "saved #1", "phase 2 #1", ""), words
    # while it aligned, the trickle had long sent its barrier on: its part was done
    assert all(trickle_words[k] in ("saved #1", "phase 2 #1", "") for k in aligning), trickle_words
    job.cancel()
    with pytest.raises(JobCancelled):
        job.join(timeout=60)
    assert job_threads(job) == []

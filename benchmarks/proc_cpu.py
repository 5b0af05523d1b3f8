"""CPU seconds of this process and its descendants (Spark's JVM, its Python workers), read from Linux /proc:
less swayed by the other processes' load than the wall clock. Shared by the Spark benchmark scripts."""

from __future__ import annotations

import os


def process_tree() -> list[tuple[int, float, str]]:
    """``(pid, CPU seconds, command line)`` of this process and every live descendant; a process's seconds
    include those of the children it waited for (utime, stime, cutime, cstime). Empty where /proc is not."""
    if not os.path.isdir("/proc"):
        return []
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    command: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline") as f:
                command[int(entry)] = f.read().replace("\0", " ")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
        cpu[int(entry)] = sum(int(x) for x in fields[11:15]) / tick
    out, todo = [], [os.getpid()]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        if pid in cpu:
            out.append((pid, cpu[pid], command.get(pid, "")))
    return out


def tree_cpu_seconds() -> float:
    """CPU seconds of this process and its descendants, the live ones and those waited for."""
    return sum(seconds for _, seconds, _ in process_tree())

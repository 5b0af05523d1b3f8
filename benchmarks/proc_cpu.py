"""CPU seconds of this process and its descendants (Spark's JVM, its Python workers), read from Linux /proc:
less swayed by the other processes' load than the wall clock. Shared by the Spark benchmark scripts; run as a
script, it prints the process trees of the PIDs given:

    python benchmarks/proc_cpu.py PID [PID ...]
"""

from __future__ import annotations

import os


def process_tree(root: int | None = None) -> list[tuple[int, float, str]]:
    """``(pid, CPU seconds, command line)`` of process ``root`` (default: this one) and every live descendant; a
    process's seconds include those of the children it waited for (utime, stime, cutime, cstime). Empty where
    /proc is not."""
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
    out, todo = [], [os.getpid() if root is None else root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        if pid in cpu:
            out.append((pid, cpu[pid], command.get(pid, "")))
    return out


def tree_cpu_seconds() -> float:
    """CPU seconds of this process and its descendants, the live ones and those waited for."""
    return sum(seconds for _, seconds, _ in process_tree())


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="CPU seconds of process trees, from /proc")
    parser.add_argument("pids", type=int, nargs="+", metavar="PID", help="the root of a process tree")
    for pid in parser.parse_args().pids:
        tree = process_tree(pid)
        print(f"{pid}: {sum(seconds for _, seconds, _ in tree):.2f} CPU-s in {len(tree)} process(es)")
        for child, seconds, command in tree:
            print(f"  {child:>7} {seconds:8.2f} s  {command[:100]}")


if __name__ == "__main__":
    main()

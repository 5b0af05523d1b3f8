"""What the kill tests read from the child processes they start: the words of a child's next
line of output, within a time limit (the child is killed if nothing comes, so a hung child
fails the test instead of hanging it)."""

from __future__ import annotations

import selectors
import subprocess


def next_line_words(child: subprocess.Popen[str], timeout: float) -> list[str]:
    """The words of ``child``'s next line of stdout; kill it and fail if none comes within
    ``timeout`` seconds."""
    assert child.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(child.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            child.kill()
            raise AssertionError(f"the child printed nothing within {timeout} s")
        return child.stdout.readline().split()

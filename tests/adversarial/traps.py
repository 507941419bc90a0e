"""A workspace full of traps, for the workspace tests and bench/loop_stall.py."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

__all__ = ["LONG_NAME", "REDOS_GLOB", "hostile_workspace"]

LONG_NAME = "a" * 200  # what `*a*a*a*a*a*a*b` backtracked over for minutes
REDOS_GLOB = "*a*a*a*a*a*a*a*a*b"


def hostile_workspace(project: Path) -> dict[str, str]:
    """Make a workspace full of traps; return each trap's path and the word its refusal names."""
    docs = project / "docs"
    docs.mkdir(parents=True)
    (docs / "real.md").write_text("# Real\n\nA regular file among traps.\n")
    (docs / LONG_NAME).write_text("long name\n")
    with open(os.path.join(os.fsencode(docs), b"caf\xe9.md"), "w") as latin1:  # not UTF-8
        latin1.write("a name no JSON client can send back\n")
    os.mkfifo(docs / "notes.md")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(docs / "sock.md"))
    listener.close()  # the socket file stays
    (docs / "dir.md").mkdir()
    os.symlink("/etc/passwd", docs / "passwd.md")
    os.symlink(docs / "loop.md", docs / "loop.md")
    traps = {
        "docs/notes.md": "FIFO",
        "docs/sock.md": "socket",
        "docs/dir.md": "directory",
        ".": "directory",
        "docs/passwd.md": "escapes",
        "docs/loop.md": "link",
        "docs/real\x00.md": "NUL",
        "../outside.md": "escapes",
    }
    try:
        os.mknod(docs / "null.md", stat.S_IFCHR | 0o600, os.makedev(1, 3))
        traps["docs/null.md"] = "device"
    except PermissionError:
        pass  # creating a device node needs root; the others still run
    return traps

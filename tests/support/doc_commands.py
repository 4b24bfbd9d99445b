"""The shell commands the README and the docs show: every line of a fenced ``bash``, ``text``,
``console`` or ``sh`` block that starts with ``./dev``, ``workbench``, ``panel serve`` or
``spark-submit`` (after an optional ``$`` prompt and ``NAME=value`` settings), its ``\\``
continuations joined and its trailing ``# comment`` dropped."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DocCommand", "documented_commands", "split_env"]

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ("README.md", "docs/*.md", "data/README.md")
"""Where users read commands (globs under the checkout)."""
_FENCE = re.compile(r"^```(bash|text|console|sh|shell)\s*\n(.*?)^```", re.S | re.M)
_COMMAND = re.compile(r"^(?:[A-Z_]+=\S+\s+)*(?:\./dev|workbench|panel serve|spark-submit)(?:\s|$)")
_COMMENT = re.compile(r"\s+#\s.*$")


@dataclass(frozen=True)
class DocCommand:
    """One documented command: where it is (file, line) and its text as a user would type it."""

    file: str
    line: int
    text: str


def _logical_lines(block: str, first_line: int) -> list[tuple[int, str]]:
    """The block's lines with continuations joined, each with its first line's number."""
    out, pending, start = [], "", first_line
    for k, raw in enumerate(block.splitlines()):
        line = raw.strip()
        if not pending:
            start = first_line + k
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        out.append((start, pending + line))
        pending = ""
    return out


def documented_commands(root: Path = ROOT) -> list[DocCommand]:
    """Every documented command, in the order of the files and their lines."""
    found = []
    for pattern in DOCUMENTS:
        for path in sorted(root.glob(pattern)):
            text = path.read_text(encoding="utf-8")
            for fence in _FENCE.finditer(text):
                first = text.count("\n", 0, fence.start(2)) + 1
                for line, logical in _logical_lines(fence.group(2), first):
                    command = _COMMENT.sub("", logical.removeprefix("$ ")).strip()
                    if _COMMAND.match(command):
                        found.append(DocCommand(str(path.relative_to(root)), line, command))
    return found


def split_env(command: str) -> tuple[dict[str, str], str]:
    """A command's leading ``NAME=value`` settings and the rest.

    >>> split_env("WORKBENCH_DATA_DIR=/data/intel ./dev dashboard")
    ({'WORKBENCH_DATA_DIR': '/data/intel'}, './dev dashboard')
    """
    env, rest = {}, command
    while m := re.match(r"^([A-Z_]+)=(\S+)\s+", rest):
        env[m.group(1)] = shlex.split(m.group(2))[0]
        rest = rest[m.end() :]
    return env, rest

"""Node names from a short pattern: ``sim-{0..49}``, ``gpu-{a,b}-{1..2}``, ``n1,n2``, as a shell expands them.

Scale testers name fifty nodes at once; a brace pattern says that in one flag and gives the same
names a shell would, so ``kubectl get node sim-7`` finds what the pattern promised. Names also
become directory names (each node's root dir), so a slash or a dot-only name is refused here; the
rest of a node name's rules are the API server's, which says exactly what is wrong.
"""

from __future__ import annotations

import itertools
import re

from kubelet_dra.errors import UsageError

MAX_NODES = 1000
"""More than this in one process is a typo (``{0..10000}``), not a plan."""
_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)$")
_WHERE = "--nodes"
_EXAMPLE = "e.g. 'sim-{0..49}', 'gpu-{a,b}-{1..2}' or 'n1,n2'"


def expand(pattern: str) -> list[str]:
    """Every node name the pattern stands for, in order; a ``UsageError`` naming what is wrong."""
    names: list[str] = []
    for term in _split(pattern, ","):
        names.extend(_expand_term(term))
    if not names:
        raise UsageError("no node names in the pattern", where=_WHERE, fix=_EXAMPLE)
    if len(names) > MAX_NODES:
        raise UsageError(
            f"the pattern stands for {len(names)} nodes, more than {MAX_NODES}", where=_WHERE, fix=_EXAMPLE
        )
    seen: set[str] = set()
    for name in names:
        if not name or "/" in name or name in (".", ".."):
            raise UsageError(f"{name!r} cannot be a node name", where=_WHERE, fix=_EXAMPLE)
        if name in seen:
            raise UsageError(f"node {name} is named twice", where=_WHERE, fix="give each node once")
        seen.add(name)
    return names


def _expand_term(term: str) -> list[str]:
    """A term without top-level commas: literal text and ``{…}`` groups, each group a range or a list."""
    parts: list[list[str]] = []
    rest = term
    while rest:
        start = rest.find("{")
        if start < 0:
            parts.append([rest])
            break
        end = _closing(rest, start)
        parts.append([rest[:start]])
        parts.append(_expand_group(rest[start + 1 : end]))
        rest = rest[end + 1 :]
    if "}" in "".join(p[0] for p in parts if len(p) == 1):
        raise UsageError(f"unbalanced '}}' in {term!r}", where=_WHERE, fix=_EXAMPLE)
    return ["".join(combination) for combination in itertools.product(*parts)] if parts else [""]


def _expand_group(body: str) -> list[str]:
    if match := _RANGE.match(body):
        first, last = match.group(1), match.group(2)
        padded = any(len(end.lstrip("-")) > 1 and end.lstrip("-").startswith("0") for end in (first, last))
        width = max(len(first), len(last)) if padded else 0  # {00..49} pads, {0..49} does not, as in bash
        low, high = int(first), int(last)
        step = 1 if high >= low else -1
        return [str(number).zfill(width) for number in range(low, high + step, step)]
    choices = _split(body, ",")
    if len(choices) < 2:
        raise UsageError(f"{{{body}}} is neither a range nor a list", where=_WHERE, fix=_EXAMPLE)
    return [name for choice in choices for name in _expand_term(choice)]


def _closing(text: str, start: int) -> int:
    depth = 0
    for index in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return index
    raise UsageError(f"unbalanced '{{' in {text!r}", where=_WHERE, fix=_EXAMPLE)


def _split(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside braces."""
    pieces, depth, current = [], 0, []
    for char in text:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == separator and depth == 0:
            pieces.append("".join(current))
            current = []
        else:
            current.append(char)
    pieces.append("".join(current))
    return pieces

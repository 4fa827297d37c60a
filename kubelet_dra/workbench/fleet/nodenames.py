"""Node names from a short pattern: ``sim-{0..49}``, ``gpu-{a,b}-{1..2}``, ``n1,n2``, as a shell expands them.

Scale testers name fifty nodes at once; a brace pattern says that in one flag and gives the same
names a shell would, so ``kubectl get node sim-7`` finds what the pattern promised. Names also
become directory names (each node's root dir), so a slash or a dot-only name is refused here; the
rest of a node name's rules are the API server's, which says exactly what is wrong.

More nodes than one machine holds are split across processes (pods of ``deploy/``, machines) by a
shard, ``INDEX/COUNT``: every process expands the same pattern and keeps its own contiguous slice,
so the shards together name each node once, without talking to each other.
"""

from __future__ import annotations

import itertools
import re

from kubelet_dra.peers.apiserver.fielderrors import dns1123_subdomain_errors
from kubelet_dra.peers.errors import UsageError

MAX_NODES = 1000
"""More than this in one process is a typo (``{0..10000}``), not a plan."""
_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)$")
_SHARD = re.compile(r"^(\d+)/(\d+)$")
_WHERE = "--nodes"
_EXAMPLE = "e.g. 'sim-{0..49}', 'gpu-{a,b}-{1..2}' or 'n1,n2'"


def expand(pattern: str, shard: str | None = None) -> list[str]:
    """Every node name the pattern stands for, in order, or the ``INDEX/COUNT`` shard's slice of them.

    A ``UsageError`` names what is wrong; the limit of one process applies to the slice it runs.
    """
    names: list[str] = []
    for term in _split(pattern, ","):
        names.extend(_expand_term(term))
    if not names:
        raise UsageError("no node names in the pattern", where=_WHERE, fix=_EXAMPLE)
    seen: set[str] = set()
    for name in names:
        check_node_name(name, where=_WHERE, fix=_EXAMPLE)
        if name in seen:
            raise UsageError(f"node {name} is named twice", where=_WHERE, fix="give each node once")
        seen.add(name)
    if shard is not None:
        names = _slice(names, shard)
    if len(names) > MAX_NODES:
        raise UsageError(
            f"{len(names)} nodes for one process, more than {MAX_NODES}",
            where=_WHERE,
            fix=f"{_EXAMPLE}; or split them over several processes with --shard INDEX/COUNT",
        )
    return names


def check_node_name(name: str, *, where: str, fix: str = "use lowercase letters, digits, '-' and '.'") -> None:
    """Refuse a name the API server would refuse for a Node, and with it any that is not one dir name."""
    if errors := dns1123_subdomain_errors(name):
        raise UsageError(f"{name!r} cannot be a node name: {errors[0]}", where=where, fix=fix)


def _slice(names: list[str], shard: str) -> list[str]:
    """Shard INDEX of COUNT: the INDEXth of COUNT contiguous slices of ``names``, sizes within one of each other."""
    match = _SHARD.match(shard)
    fix = "give INDEX/COUNT with 0 <= INDEX < COUNT, e.g. 0/2 and 1/2 for two processes"
    if not match:
        raise UsageError(f"{shard!r} is not INDEX/COUNT", where="--shard", fix=fix)
    index, count = int(match.group(1)), int(match.group(2))
    if not 0 <= index < count:
        raise UsageError(f"shard {index} of {count} does not exist", where="--shard", fix=fix)
    if count > len(names):
        raise UsageError(
            f"{count} shards of {len(names)} nodes leave some shards without a node",
            where="--shard",
            fix=f"run at most {len(names)} shards, or name more nodes in --nodes",
        )
    return names[index * len(names) // count : (index + 1) * len(names) // count]


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

"""The house rules of the package's layout that no linter holds: every module under 400 lines, and
no two modules that import each other, directly or round a longer circle (type-hint-only imports
count too: a circle is a seam drawn in the wrong place however the import is guarded)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import kubelet_dra

PACKAGE = Path(kubelet_dra.__file__).parent
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    """Every hand-written module by dotted name (the generated protobuf modules are not ours to shape)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "_pb2" in path.name:
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


def _imported(module: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The package's own modules ``module`` imports: ``from a import b`` names ``a.b`` when that is a module."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    yield f"{base}.{alias.name}"
                elif base in known:
                    yield base


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            following = next(edges, None)
            if following is not None:
                if following not in index:
                    index[following] = low[following] = len(index)
                    stack.append(following)
                    on_stack.add(following)
                    work.append((following, iter(sorted(graph[following]))))
                elif following in on_stack:
                    low[node] = min(low[node], index[following])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_is_under_400_lines() -> None:
    too_long = {
        str(path.relative_to(PACKAGE.parent)): count
        for path in _modules().values()
        if (count := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not too_long, f"modules over {MAX_LINES} lines (split each along a seam): {too_long}"


def test_no_module_imports_itself_round_a_circle() -> None:
    modules = _modules()
    graph = {name: set(_imported(name, path, modules)) - {name} for name, path in modules.items()}
    circles = _circles(graph)
    assert not circles, f"import circles (move what both sides need into a module below them): {circles}"


def test_the_circle_finder_sees_a_circle_through_three_modules() -> None:
    """The finder itself: a circle a -> b -> c -> a beside a tail d -> a is one circle of three."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]

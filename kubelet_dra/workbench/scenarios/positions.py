"""Where each field of a scenario file is written, and the errors pinned there as ``file:line:column: field``.

Positions come from ``yaml.compose``'s nodes, mapped by field path; the walk also finds duplicate
keys, which PyYAML would silently merge.
"""

from __future__ import annotations

import attrs
import yaml

from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.workbench.scenarios.model import Position
from kubelet_dra.workbench.scenarios.validate import Path as FieldPath


@attrs.frozen
class Issue:
    """One error in a scenario file."""

    file: str
    line: int
    column: int
    field: str
    message: str

    def __str__(self) -> str:
        field = f" {self.field}:" if self.field else ""
        return f"{self.file}:{self.line}:{self.column}:{field} {self.message}"


class ScenarioError(ConfigError):
    """A scenario file is not valid; ``issues`` lists every error found."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = issues
        count = f"{len(issues)} error(s)" if len(issues) > 1 else "1 error"
        super().__init__(
            f"invalid scenario ({count}):\n" + "\n".join(f"  {issue}" for issue in issues),
            fix="correct the fields named above; scenarios/schema.json lists every field",
        )


def field_text(path: FieldPath) -> str:
    """``("steps", 3, "expect")`` → ``steps[3].expect``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def position(mark: yaml.Mark) -> Position:
    """A YAML mark (0-based) as a 1-based position."""
    return Position(mark.line + 1, mark.column + 1)


class Positions:
    """Field path → where its value (and, for mapping keys, the key) starts in the file."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.values: dict[FieldPath, Position] = {}
        self.keys: dict[FieldPath, Position] = {}
        self.duplicates: list[Issue] = []

    def walk(self, node: yaml.Node, path: FieldPath = ()) -> None:
        self.values[path] = position(node.start_mark)
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                key = str(key_node.value)
                if key in seen:
                    where = position(key_node.start_mark)
                    field = field_text((*path, key))
                    self.duplicates.append(
                        Issue(self.file, where.line, where.column, field, f"duplicate field {key!r}")
                    )
                seen.add(key)
                self.keys[(*path, key)] = position(key_node.start_mark)
                self.walk(value_node, (*path, key))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self.walk(item, (*path, index))

    def at(self, path: FieldPath, *, key: bool = False) -> Position:
        if key and path in self.keys:
            return self.keys[path]
        while path not in self.values and path:
            path = path[:-1]
        return self.values.get(path, Position(1, 1))

    def issue(self, path: FieldPath, message: str, *, key: bool = False) -> Issue:
        where = self.at(path, key=key)
        return Issue(self.file, where.line, where.column, field_text(path), message)

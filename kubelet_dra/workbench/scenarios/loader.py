"""Scenario files → ``Scenario``: the whole file is checked before anything runs, and every error is reported.

Three passes, each reporting all it finds with ``file:line:column: field.path: message``
(``positions``): YAML syntax (and duplicate keys, which PyYAML would silently merge), the JSON
Schema (unknown fields, types, required fields, enum values, durations), then what a schema
cannot say (``semantics``: a step names a driver that does not exist, a fault knob's value, a
command's placeholders). Only a file that passed all three is built into the model (``build``).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from kubelet_dra.peers import goyaml
from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.workbench.scenarios import schema, semantics
from kubelet_dra.workbench.scenarios.build import build
from kubelet_dra.workbench.scenarios.model import Position, Scenario
from kubelet_dra.workbench.scenarios.positions import Issue, Positions, ScenarioError, position
from kubelet_dra.workbench.scenarios.validate import Validator


def load(path: str | Path) -> Scenario:
    """Read and check one scenario file; ``ScenarioError`` lists every problem, ``ConfigError`` an unreadable file."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else "not UTF-8 text"
        raise ConfigError(f"cannot read the scenario: {reason}", where=file, fix="check the path") from None
    return loads(text, file)


def loads(text: str, file: str = "<scenario>") -> Scenario:
    positions = Positions(file)
    try:
        node = goyaml.compose(text)
        document = goyaml.load(text)
    except goyaml.GoYAMLError as err:
        message = f"YAML {str(err).removeprefix('yaml: ')}: {err.fix}"
        raise ScenarioError([Issue(file, 1, 1, "", message)]) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = position(mark) if mark else Position(1, 1)
        message = f"YAML syntax: {err.problem or err.context}"
        raise ScenarioError([Issue(file, where.line, where.column, "", message)]) from None
    except yaml.YAMLError as err:
        raise ScenarioError([Issue(file, 1, 1, "", f"YAML: {err}")]) from None
    if node is not None:
        positions.walk(node)
    problems = Validator(schema.SCHEMA).problems(document if document is not None else {})
    issues = positions.duplicates + [positions.issue(p.path, p.message, key=p.key) for p in problems]
    if issues:
        raise ScenarioError(_in_order(issues))
    issues = [positions.issue(path, message) for path, message in semantics.problems(document)]
    if issues:
        raise ScenarioError(_in_order(issues))
    return build(document, file, positions)


def _in_order(issues: list[Issue]) -> list[Issue]:
    return sorted(issues, key=lambda issue: (issue.line, issue.column))

"""Label selectors, parsed and matched the way kube-apiserver does (apimachinery's
``labels.Parse``): a lexer, a recursive-descent parser and the key and value checks.

Parse errors travel as 400 BadRequest with the parser's own wording (``unable to parse
requirement: ...``) because kubectl and client-go show those messages verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from kubelet_dra.peers.apiserver import status

_SPECIAL = frozenset("=!(),<>")
_WHITESPACE = frozenset(" \t\r\n")
_SYMBOLS = frozenset({"!", "!=", "=", "==", "(", ")", ",", ">", "<"})
_KEYWORDS = frozenset({"in", "notin"})
_BINARY = {"in": "in", "notin": "notin", "=": "=", "==": "=", "!=": "!=", ">": "gt", "<": "lt"}
_BINARY_NAMES = "in, notin, =, ==, !=, gt, lt"
_ID = "identifier"
_END = "end"

_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_PREFIX_MSG = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_QUALIFIED_MSG = (
    "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
    "(e.g. 'example.com/MyName')"
)
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


class _ParseError(Exception):
    """A selector syntax error; its text becomes the 400 message."""


@attrs.frozen
class Requirement:
    """One comma-separated term of a label selector."""

    key: str
    operator: str  # exists, !, in, notin, =, !=, gt, lt
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        op = self.operator
        if op == "exists":
            return present
        if op == "!":
            return not present
        if op in ("in", "="):
            return present and labels[self.key] in self.values
        if op in ("notin", "!="):
            return not present or labels[self.key] not in self.values
        if not present or not re.fullmatch(r"[-+]?\d+", labels[self.key]):
            return False
        (bound,) = self.values
        value = int(labels[self.key])
        return value > int(bound) if op == "gt" else value < int(bound)


@attrs.frozen
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


def parse_label_selector(text: str) -> LabelSelector:
    """Parse ``a=b,c!=d,e in (f,g),!h`` into a selector; 400 BadRequest on any error."""
    try:
        return LabelSelector(tuple(sorted(_LabelParser(text).parse(), key=lambda r: r.key)))
    except _ParseError as err:
        raise status.bad_request(str(err)) from None


def _lex(text: str) -> list[tuple[str, str]]:
    """Tokens as (kind, literal): kind is the symbol/keyword itself, identifier, or end."""
    tokens: list[tuple[str, str]] = []
    pos, size = 0, len(text)
    while True:
        while pos < size and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= size:
            tokens.append((_END, ""))
            return tokens
        start = pos
        if text[pos] in _SPECIAL:
            # Longest run of special characters that still forms a known symbol.
            best = pos + 1
            while pos < size and text[pos] in _SPECIAL:
                pos += 1
                if text[start:pos] in _SYMBOLS:
                    best = pos
                else:
                    break
            pos = best
            tokens.append((text[start:pos], text[start:pos]))
            continue
        while pos < size and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
            pos += 1
        word = text[start:pos]
        tokens.append((word if word in _KEYWORDS else _ID, word))


class _LabelParser:
    """Recursive descent over the apimachinery label selector grammar."""

    def __init__(self, text: str) -> None:
        self._tokens = _lex(text)
        self._pos = 0

    def _peek(self, values: bool = True) -> tuple[str, str]:
        kind, literal = self._tokens[self._pos]
        return (_ID if values and kind in _KEYWORDS else kind), literal

    def _take(self, values: bool = True) -> tuple[str, str]:
        token = self._peek(values)
        self._pos += 1
        return token

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            kind, literal = self._peek()
            if kind == _END:
                return requirements
            if kind not in (_ID, "!"):
                raise _ParseError(f"found '{literal}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self._requirement())
            except _ParseError as err:
                raise _ParseError(f"unable to parse requirement: {err}") from None
            kind, literal = self._take()
            if kind == _END:
                return requirements
            if kind != ",":
                raise _ParseError(f"found '{literal}', expected: ',' or 'end of string'")
            kind, literal = self._peek()
            if kind not in (_ID, "!"):
                raise _ParseError(f"found '{literal}', expected: identifier after ','")

    def _requirement(self) -> Requirement:
        kind, key = self._take()
        negated = kind == "!"
        if negated:
            kind, key = self._take()
        if kind != _ID:
            raise _ParseError(f"found '{key}', expected: identifier")
        _check_key(key)
        if self._peek()[0] in (_END, ","):
            return Requirement(key, "!" if negated else "exists")
        kind, literal = self._take(values=False)
        operator = _BINARY.get(kind)
        if operator is None:
            raise _ParseError(f"found '{literal}', expected: {_BINARY_NAMES}")
        values = self._set_values() if operator in ("in", "notin") else self._exact_value()
        _check_values(key, operator, sorted(values))
        return Requirement(key, operator, frozenset(values))

    def _set_values(self) -> set[str]:
        kind, literal = self._take()
        if kind != "(":
            raise _ParseError(f"found '{literal}' expected: '('")
        kind, literal = self._peek()
        if kind == ")":
            self._take()
            return {""}
        if kind not in (_ID, ","):
            raise _ParseError(f"found '{literal}', expected: ',', ')' or identifier")
        values: set[str] = set()
        while True:
            kind, literal = self._take()
            if kind == _ID:
                values.add(literal)
                following, text = self._peek()
                if following == ")":
                    self._take()
                    return values
                if following != ",":
                    raise _ParseError(f"found '{text}', expected: ',' or ')'")
            elif kind == ",":
                following, _ = self._peek()
                if not values or following in (",", ")"):
                    values.add("")  # empty members: "(,a)", "(a,)", "(a,,b)"
                if following == ")":
                    self._take()
                    return values
            else:
                raise _ParseError(f"found '{literal}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        kind, _ = self._peek()
        if kind in (_END, ","):
            return {""}
        kind, literal = self._take()
        if kind != _ID:
            raise _ParseError(f"found '{literal}', expected: identifier")
        return {literal}


def _invalid(field: str, value: str, detail: str) -> str:
    return f'{field}: Invalid value: "{value}": {detail}'


def _check_key(key: str) -> None:
    parts = key.split("/")
    problems: list[str] = []
    if len(parts) > 2:
        problems.append(_QUALIFIED_MSG)
    else:
        name = parts[-1]
        if len(parts) == 2:
            prefix = parts[0]
            if not prefix:
                problems.append("prefix part must be non-empty")
            elif len(prefix) > 253 or not _SUBDOMAIN_RE.match(prefix):
                problems.append(_PREFIX_MSG)
        if not name:
            problems.append("name part must be non-empty")
        elif len(name) > 63:
            problems.append("name part must be no more than 63 bytes")
        if name and not _NAME_RE.match(name):
            problems.append(_NAME_MSG)
    if problems:
        raise _ParseError(_invalid("<nil>", key, "; ".join(problems)))


def _check_values(key: str, operator: str, values: list[str]) -> None:
    errors: list[str] = []
    if operator in ("gt", "lt"):
        errors.extend(
            _invalid(f"values[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer")
            for i, v in enumerate(values)
            if not re.fullmatch(r"[-+]?\d+", v)
        )
    for i, value in enumerate(values):
        detail = []
        if len(value) > 63:
            detail.append("must be no more than 63 bytes")
        if not _VALUE_RE.match(value):
            detail.append(_VALUE_MSG)
        if detail:
            errors.append(_invalid(f"values[{i}][{key}]", value, "; ".join(detail)))
    if errors:
        raise _ParseError(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")

"""What a list or watch selects: the namespace, the label selector (parsed in ``labelselectors``)
and field selectors, parsed and matched the way kube-apiserver does.

Parse errors travel as 400 BadRequest with the apimachinery parser's own wording
(``field label not supported: x``) because kubectl and client-go show those messages verbatim.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from kubelet_dra.peers.apiserver import status
from kubelet_dra.peers.apiserver.labelselectors import LabelSelector, parse_label_selector
from kubelet_dra.peers.apiserver.resources import ResourceType

# Field labels every resource accepts, and how some resource-specific labels read their value.
_META_FIELDS = ("metadata.name", "metadata.namespace")
_FIELD_PATHS = {"source": ("source", "component")}
_BOOLEAN_FIELDS = frozenset({"spec.unschedulable", "spec.hostNetwork"})


@attrs.frozen
class FieldTerm:
    field: str
    path: tuple[str, ...]
    value: str
    negated: bool

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return (field_value(obj, self.field, self.path) == self.value) != self.negated


@attrs.frozen
class FieldSelector:
    terms: tuple[FieldTerm, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all(t.matches(obj) for t in self.terms)


@attrs.frozen
class Selection:
    """What a list or watch asks for: a namespace (None = all) plus label and field selectors."""

    namespace: str | None
    labels: LabelSelector
    fields: FieldSelector

    @property
    def filters(self) -> bool:
        """Whether label or field selectors narrow the result (kube then omits remainingItemCount)."""
        return bool(self.labels.requirements or self.fields.terms)

    @property
    def key_term(self) -> FieldTerm | None:
        """A field the selection requires to equal a value (the first such term), if any: only objects with that
        value, before or after a change, can matter to a watch, so the watch channel files the watcher under it."""
        return next((term for term in self.fields.terms if not term.negated), None)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        metadata = obj["metadata"]
        if self.namespace is not None and metadata.get("namespace") != self.namespace:
            return False
        if self.labels.requirements and not self.labels.matches(metadata.get("labels") or {}):
            return False
        return not self.fields.terms or self.fields.matches(obj)


def selection(rt: ResourceType, namespace: str | None, label_selector: str, field_selector: str) -> Selection:
    """Parse both selectors for ``rt``; a cluster-scoped resource ignores ``namespace``."""
    return Selection(
        namespace=(namespace or None) if rt.namespaced else None,
        labels=parse_label_selector(label_selector),
        fields=parse_field_selector(rt, field_selector),
    )


def field_value(obj: Mapping[str, Any], field: str, path: tuple[str, ...]) -> str:
    """The string a field selector compares: "" when absent, booleans as true/false."""
    value: Any = obj
    for part in path:
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return "false" if field in _BOOLEAN_FIELDS else ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# -- field selectors -------------------------------------------------------------------------------------------


def parse_field_selector(rt: ResourceType, text: str) -> FieldSelector:
    """Parse ``a=b,c!=d`` (``\\`` escapes ``,``, ``=`` and ``\\`` in values) against ``rt``'s field labels."""
    terms = []
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        field, operator, raw = _split_term(part, text)
        if field not in _META_FIELDS and field not in rt.field_labels:
            raise status.bad_request(f"field label not supported: {field}")
        path = _FIELD_PATHS.get(field, tuple(field.split(".")))
        terms.append(FieldTerm(field, path, _unescape(raw), operator == "!="))
    return FieldSelector(tuple(terms))


def _split_terms(text: str) -> list[str]:
    terms, current, escaped = [], [], False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            current.append(char)
            escaped = True
        elif char == ",":
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return terms


def _split_term(term: str, text: str) -> tuple[str, str, str]:
    for i in range(len(term)):
        for operator in ("!=", "==", "="):
            if term.startswith(operator, i):
                return term[:i], operator, term[i + len(operator) :]
    raise status.bad_request(f"invalid selector: '{text}'; can't understand '{term}'")


def _unescape(value: str) -> str:
    out, chars = [], iter(value)
    for char in chars:
        if char == "\\":
            following = next(chars, "")
            if following not in ("\\", ",", "="):
                raise status.bad_request(f"invalid field selector: invalid escape sequence: \\{following}")
            out.append(following)
        elif char in (",", "="):
            raise status.bad_request(f"invalid field selector: unescaped character {char}")
        else:
            out.append(char)
    return "".join(out)

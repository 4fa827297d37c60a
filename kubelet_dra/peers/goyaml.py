"""YAML read with go-yaml's bounds: alias expansion, deep nesting and self-holding anchors refused.

PyYAML shares an aliased value instead of copying it, so a few hundred bytes of nested aliases
(each level naming the one below nine times) load at once and then expand nine times per level
under anything that walks the result; an anchor that holds itself loads as a cycle that every walk
follows until RecursionError. go-yaml copies on each alias and stops a document whose decoding is
mostly alias expansion (``document contains excessive aliasing``, the fix for CVE-2019-11253
that kube-apiserver's YAML bodies rely on) or whose anchor contains itself. ``compose`` counts the
nodes go-yaml's ``decoder.unmarshal`` would decode, with its ratio, before anything is built.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_DEPTH = 1_000
"""Nesting refused beyond this, as libyaml refuses it. go-yaml takes 10,000 levels, but PyYAML's reader slows with
the square of the depth of flow collections (17 s for 10,000 levels): 1,000 keep a body under half a second."""
_RATIO_LOW = 400_000
_RATIO_HIGH = 4_000_000


class GoYAMLError(yaml.YAMLError):
    """A document refused although PyYAML would read it: go-yaml's words where it has them; ``fix`` says what to do."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


_NEST_LESS = "nest the document less deeply"
_ALIAS_LESS = "write the values out instead of aliases that expand them"


def allowed_alias_ratio(decoded: int) -> float:
    """go-yaml's ``allowedAliasRatio``: 99% of small documents may come from aliases, 10% of huge ones."""
    if decoded <= _RATIO_LOW:
        return 0.99
    if decoded >= _RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _RATIO_LOW) / (_RATIO_HIGH - _RATIO_LOW)


class _Composer(yaml.SafeLoader):
    """A SafeLoader that refuses nesting deeper than go-yaml's and remembers each anchor's name."""

    def __init__(self, stream: str | bytes) -> None:
        super().__init__(stream)
        self.depth = 0
        self.anchor_names: dict[int, str] = {}

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event = self.peek_event()
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise GoYAMLError(f"yaml: exceeded max depth of {MAX_DEPTH}", _NEST_LESS)
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        if event.anchor and not isinstance(event, yaml.AliasEvent):
            self.anchor_names[id(node)] = event.anchor
        return node


def compose(text: str | bytes) -> yaml.Node | None:
    """The document's node graph, or ``yaml.YAMLError`` (``GoYAMLError`` for what go-yaml refuses)."""
    nodes = _compose(text, all_documents=False)
    return nodes[0] if nodes else None


def load(text: str | bytes) -> Any:
    """``yaml.safe_load`` within go-yaml's bounds (aliased values shared, as PyYAML builds them)."""
    node = compose(text)
    return None if node is None else yaml.SafeLoader("").construct_document(node)


def load_all(text: str | bytes) -> list[Any]:
    """``yaml.safe_load_all`` within go-yaml's bounds, each document counted on its own as go-yaml does."""
    return [yaml.SafeLoader("").construct_document(node) for node in _compose(text, all_documents=True)]


def _check_depth(text: str | bytes) -> None:
    """Refuse nesting deeper than ``MAX_DEPTH`` in time linear in the body, with libyaml's parser where PyYAML
    has it: PyYAML's own scanner slows with the square of the depth of flow collections, and spent seconds
    of the API server's loop on a 50,000-level body before its composer reached the bound. A body libyaml
    finds malformed is left to the composer, which says what is wrong in PyYAML's words."""
    if not yaml.__with_libyaml__:
        return
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            if isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(event, yaml.NodeEvent) and depth + 1 > MAX_DEPTH:
                raise GoYAMLError(f"yaml: exceeded max depth of {MAX_DEPTH}", _NEST_LESS)
            elif isinstance(event, yaml.CollectionStartEvent):
                depth += 1
    except yaml.YAMLError as err:
        if isinstance(err, GoYAMLError) or "exceeded maximum nesting depth" in str(err):
            raise GoYAMLError(f"yaml: exceeded max depth of {MAX_DEPTH}", _NEST_LESS) from None


def _compose(text: str | bytes, *, all_documents: bool) -> list[yaml.Node]:
    _check_depth(text)
    return _compose_checked(text, all_documents=all_documents)


def _compose_checked(text: str | bytes, *, all_documents: bool) -> list[yaml.Node]:
    """The nodes, once ``_check_depth`` let ``text`` through (or where libyaml is missing)."""
    composer = _Composer(text)
    nodes: list[yaml.Node] = []
    try:
        if not all_documents:
            nodes = [node for node in [composer.get_single_node()] if node is not None]
        while all_documents and composer.check_node():
            nodes += [node for node in [composer.get_node()] if node is not None]
    except RecursionError:
        raise GoYAMLError("yaml: nested deeper than this process can read", _NEST_LESS) from None
    finally:
        composer.dispose()
    for node in nodes:
        _check_aliases(node, composer.anchor_names)
    return nodes


def _check_aliases(root: yaml.Node, anchor_names: dict[int, str]) -> None:
    """Walk as go-yaml decodes (each alias expanded in place), counting, without building anything.

    A node met again in document order is met through an alias: its anchor was written first.
    """
    count = _DecodeCount()
    met: set[int] = set()
    open_nodes: set[int] = set()
    work: list[tuple[yaml.Node, bool, bool]] = [(root, False, False)]
    while work:
        node, leaving, through_alias = work.pop()
        if leaving:
            open_nodes.discard(id(node))
            count.alias_depth -= through_alias
            continue
        through_alias = id(node) in met
        if through_alias:
            if id(node) in open_nodes:
                name = anchor_names.get(id(node), "")
                raise GoYAMLError(f"yaml: anchor '{name}' value contains itself", _ALIAS_LESS)
            count.decode()  # the alias, then what it names
            count.alias_depth += 1
        count.decode()
        met.add(id(node))
        open_nodes.add(id(node))
        work.append((node, True, through_alias))
        work.extend((child, False, False) for child in reversed(_children(node)))


class _DecodeCount:
    """go-yaml's ``decodeCount`` and ``aliasCount``: every node decoded, and those decoded inside an alias."""

    def __init__(self) -> None:
        self.decoded = 0
        self.aliased = 0
        self.alias_depth = 0

    def decode(self) -> None:
        self.decoded += 1
        self.aliased += self.alias_depth > 0
        if (
            self.aliased > 100
            and self.decoded > 1000
            and self.aliased / self.decoded > allowed_alias_ratio(self.decoded)
        ):
            raise GoYAMLError("yaml: document contains excessive aliasing", _ALIAS_LESS)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []

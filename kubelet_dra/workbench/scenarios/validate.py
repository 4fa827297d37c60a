"""A small JSON Schema validator (the subset ``schema.py`` uses) that reports every error with its field path.

jsonschema would stop at messages a user must decode ("is not valid under any of the given
schemas"); this one knows the shapes of our schema and says what is allowed instead: the
unknown field and the known ones, the one action a step needs, the enum values.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from typing import Any

import attrs

Path = tuple[str | int, ...]

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}
_ARTICLE = {"object": "an object", "array": "a list", "integer": "an integer"}


@attrs.frozen
class Problem:
    """One validation error: where (the field path; ``key`` when it is about a key itself) and what."""

    path: Path
    message: str
    key: bool = False
    """The error is about the key at ``path`` (an unknown field), not its value."""


def type_name(value: Any) -> str:
    for name, types in _TYPES.items():
        if isinstance(value, types) and not (isinstance(value, bool) and name in ("integer", "number")):
            return name
    return type(value).__name__


def is_type(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    return isinstance(value, _TYPES[name])


class Validator:
    """``Validator(schema).problems(document)``: every problem, in document order."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.root = schema

    def problems(self, value: Any) -> list[Problem]:
        return list(self._check(value, self.root, ()))

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = self.root["$defs"][schema["$ref"].rpartition("/")[2]]
        return schema

    def _check(self, value: Any, schema: dict[str, Any], path: Path) -> Iterator[Problem]:
        schema = self._resolve(schema)
        if "oneOf" in schema and "properties" not in schema:
            yield from self._one_of(value, schema["oneOf"], path)
            return
        types = schema.get("type")
        if types is not None:
            names = [types] if isinstance(types, str) else types
            if not any(is_type(value, name) for name in names):
                wanted = " or ".join(_ARTICLE.get(name, f"a {name}") for name in names)
                yield Problem(path, f"expected {wanted}, got {_described(value)}")
                return
        if "const" in schema and value != schema["const"]:
            yield Problem(path, f"must be {_show(schema['const'])}, got {_show(value)}")
        if "enum" in schema and value not in schema["enum"]:
            yield Problem(path, f"{_show(value)} is not allowed (allowed: {', '.join(map(str, schema['enum']))})")
        if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
            hint = schema.get("description") or f"must match {schema['pattern']}"
            yield Problem(path, f"bad value {_show(value)}: {hint}")
        if is_type(value, "number") and "minimum" in schema and value < schema["minimum"]:
            yield Problem(path, f"{value} is below the minimum {schema['minimum']}")
        if isinstance(value, dict):
            yield from self._object(value, schema, path)
        if isinstance(value, list):
            if len(value) < schema.get("minItems", 0):
                yield Problem(path, f"needs at least {schema['minItems']} item(s)")
            for index, item in enumerate(value):
                if "items" in schema:
                    yield from self._check(item, schema["items"], (*path, index))

    def _object(self, value: dict[str, Any], schema: dict[str, Any], path: Path) -> Iterator[Problem]:
        properties: dict[str, Any] = schema.get("properties", {})
        if "oneOf" in schema:
            strict = schema.get("additionalProperties") is False
            yield from self._exactly_one(value, schema["oneOf"], path, set(properties) if strict else None)
        for name in schema.get("required", ()):
            if name not in value:
                yield Problem(path, f"missing required field {name!r}")
        names = schema.get("propertyNames", {}).get("enum")
        for key, item in value.items():
            key_path = (*path, key)
            if names is not None and key not in names:
                yield Problem(key_path, f"unknown name {key!r}{_suggest(key, names)}", key=True)
            elif key in properties:
                yield from self._check(item, properties[key], key_path)
            elif schema.get("additionalProperties") is False:
                yield Problem(key_path, f"unknown field {key!r}{_suggest(key, properties)}", key=True)
            elif isinstance(schema.get("additionalProperties"), dict):
                yield from self._check(item, schema["additionalProperties"], key_path)

    def _exactly_one(
        self, value: dict[str, Any], alternatives: list[dict[str, Any]], path: Path, known: set[str] | None
    ) -> Iterator[Problem]:
        """``oneOf`` of ``required`` alternatives: the object names exactly one of these keys.

        With ``known`` (the object's fields, others being refused), a misspelt choice is left to its unknown-field
        problem, which already says "did you mean"; a second error listing every choice would only repeat it."""
        choices = [alternative["required"][0] for alternative in alternatives]
        present = [choice for choice in choices if choice in value]
        misspelt = known is not None and any(
            key not in known and difflib.get_close_matches(str(key), choices, n=1) for key in value
        )
        if not present and not misspelt:
            yield Problem(path, f"needs one of: {', '.join(choices)}")
        elif len(present) > 1:
            yield Problem(path, f"has {' and '.join(present)}; only one of them is allowed")

    def _one_of(self, value: Any, alternatives: list[dict[str, Any]], path: Path) -> Iterator[Problem]:
        """A value of one of several shapes: checked against the one whose type it has."""
        for alternative in alternatives:
            types = self._resolve(alternative).get("type")
            names = [types] if isinstance(types, str) else types or []
            if any(is_type(value, name) for name in names):
                yield from self._check(value, alternative, path)
                return
        kinds = [self._resolve(alternative).get("type") for alternative in alternatives]
        wanted = " or ".join(_ARTICLE.get(str(kind), f"a {kind}") for kind in kinds)
        yield Problem(path, f"expected {wanted}, got {_described(value)}")


def _described(value: Any) -> str:
    """``string 'many'``, ``integer 3``, ``null``, ``an object``: what was found instead."""
    name = type_name(value)
    if value is None or name in ("object", "array"):
        return _ARTICLE.get(name, name)
    return f"{name} {_show(value)}"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _suggest(key: object, known: Any) -> str:
    """The allowed names, and the one ``key`` was probably meant to be (YAML keys may be null or numbers)."""
    names = sorted(known)
    close = difflib.get_close_matches(str(key), names, n=1)
    allowed = f"allowed: {', '.join(names)}" if names else "no fields allowed here"
    return f" (did you mean {close[0]!r}? {allowed})" if close else f" ({allowed})"

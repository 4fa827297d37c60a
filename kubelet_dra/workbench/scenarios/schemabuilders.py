"""The few JSON Schema shapes the scenario schema is written with, and the read side of ``exactly_one``.

Closed objects (an unknown field is an error), typed scalars with a description for editors,
``$ref`` to shared definitions, and objects with exactly one of several keys (a step's action,
an expectation's kind), which ``chosen`` reads back once the schema has passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def obj(properties: dict[str, Any], *, required: tuple[str, ...] = (), description: str = "") -> dict[str, Any]:
    """A closed object: unknown fields are errors."""
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    if description:
        schema["description"] = description
    return schema


def string(description: str = "", **extra: Any) -> dict[str, Any]:
    return {"type": "string", **({"description": description} if description else {}), **extra}


def enum(values: tuple[str, ...], description: str = "") -> dict[str, Any]:
    return string(description, enum=list(values))


def boolean(description: str = "") -> dict[str, Any]:
    return {"type": "boolean", **({"description": description} if description else {})}


def integer(description: str = "", minimum: int = 0) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, **({"description": description} if description else {})}


def array(items: dict[str, Any], description: str = "", min_items: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": items}
    if min_items:
        schema["minItems"] = min_items
    if description:
        schema["description"] = description
    return schema


def ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/$defs/{name}"}


def exactly_one(properties: dict[str, Any], choices: tuple[str, ...], common: dict[str, Any]) -> dict[str, Any]:
    """An object with exactly one of ``choices`` as a key, plus the ``common`` fields."""
    schema = obj({**common, **properties})
    schema["oneOf"] = [{"required": [choice]} for choice in choices]
    return schema


def chosen(instance: Mapping[str, Any], choices: Iterable[str]) -> str:
    """The one key of ``choices`` that an ``exactly_one`` object which passed the schema holds."""
    return next(key for key in choices if key in instance)

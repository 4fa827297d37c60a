"""Field errors worded like kube-apiserver's, and the name formats Kubernetes checks.

kubectl prints the ``message`` of each cause, and tools match on ``reason`` and ``field``, so
the wording follows the apimachinery conventions: ``Required value``, ``Invalid value: "x":
<why>``, ``Unsupported value: "x": supported values: "a", "b"``, ``Duplicate value: "x"``,
``Too long: may not be more than 63 bytes``, ``Too many: 300: must have at most 256 items``.
The format checks return kube's reasons for rejecting a name, one string per broken rule; the
readers (``dict_at``, ``list_at``, ``str_at``) let the validation modules walk malformed objects
without crashing, so a wrong type becomes a field error instead of a 500.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable
from typing import Any

import attrs

from kubelet_dra.peers.apiserver.status import ApiError, invalid

Obj = dict[str, Any]

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
C_IDENTIFIER_MAX = 32
ANNOTATIONS_MAX_BYTES = 256 * 1024

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', "
    "followed by a string of alphanumeric characters or '_'"
)
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    """kube's wording of a failed pattern match, examples and all."""
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} ({'e.g. ' + shown if shown else ''}regex used for validation is '{fmt}')"


def _max_len_error(length: int, unit: str = "characters") -> str:
    """kube 1.36 counts "characters" for names and keys, "bytes" for label parts and declaratively validated names."""
    return f"must be no more than {length} {unit}"


def dns1123_label_errors(value: str) -> list[str]:
    """Why ``value`` is not a DNS-1123 label (empty list: it is one)."""
    errors = [_max_len_error(DNS1123_LABEL_MAX)] if len(value) > DNS1123_LABEL_MAX else []
    if not re.fullmatch(_DNS1123_LABEL_FMT, value):
        errors.append(_regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def dns1123_subdomain_errors(value: str, unit: str = "characters") -> list[str]:
    """Why ``value`` is not a DNS-1123 subdomain."""
    errors = [_max_len_error(DNS1123_SUBDOMAIN_MAX, unit)] if len(value) > DNS1123_SUBDOMAIN_MAX else []
    if not re.fullmatch(_DNS1123_SUBDOMAIN_FMT, value):
        errors.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """Why ``value`` is not a qualified name (``[prefix/]name``, as label keys are)."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a qualified name "
            + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    errors: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        prefix_errors = dns1123_subdomain_errors(prefix, "bytes") if prefix else ["must be non-empty"]
        errors.extend("prefix part " + error for error in prefix_errors)
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errors.append("name part " + _max_len_error(QUALIFIED_NAME_MAX, "bytes"))
    if not re.fullmatch(_QUALIFIED_NAME_FMT, name):
        errors.append(
            "name part " + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a valid label value."""
    errors = [_max_len_error(LABEL_VALUE_MAX, "bytes")] if len(value) > LABEL_VALUE_MAX else []
    if not re.fullmatch(_LABEL_VALUE_FMT, value):
        errors.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def c_identifier_errors(value: str) -> list[str]:
    """Why ``value`` is not a C identifier (device attribute and capacity names)."""
    if re.fullmatch(_C_IDENTIFIER_FMT, value):
        return []
    return [_regex_error(_C_IDENTIFIER_MSG, _C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")]


def config_key_errors(value: str) -> list[str]:
    """Why ``value`` is not a valid ConfigMap key."""
    errors = [_max_len_error(DNS1123_SUBDOMAIN_MAX)] if len(value) > DNS1123_SUBDOMAIN_MAX else []
    if not re.fullmatch(_CONFIG_KEY_FMT, value):
        errors.append(_regex_error(_CONFIG_KEY_MSG, _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    if value in (".", ".."):
        errors.append(f"must not be '{value}'")
    elif value.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def validate_labels(labels: Obj, field: str, errors: FieldErrors) -> None:
    """Label keys are qualified names, values short and simple."""
    for key, value in labels.items():
        errors.each_invalid(field, key, qualified_name_errors(key))
        if not isinstance(value, str):
            errors.invalid(field, value, "label values must be strings")
        else:
            errors.each_invalid(field, value, label_value_errors(value))


def validate_annotations(annotations: Obj, field: str, errors: FieldErrors) -> None:
    """Annotation keys are (case-insensitive) qualified names; all of them together stay under 256 KiB."""
    total = 0
    for key, value in annotations.items():
        errors.each_invalid(field, key, qualified_name_errors(key.lower()))
        total += len(key.encode()) + len(str(value).encode())
    if total > ANNOTATIONS_MAX_BYTES:
        errors.too_long(field, ANNOTATIONS_MAX_BYTES)


def dict_at(obj: Any, key: str) -> dict[str, Any]:
    """``obj[key]`` when it is an object, else an empty one (absent, null or malformed)."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def list_at(obj: Any, key: str) -> list[Any]:
    """``obj[key]`` when it is a list, else an empty one."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, list) else []


def str_at(obj: Any, key: str) -> str:
    """``obj[key]`` when it is a string, else ""."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, str) else ""


def _normalized(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _normalized(item) for key, item in value.items() if item is not None and item != []}
    if isinstance(value, list):
        return [_normalized(item) for item in value]
    return value


def semantic_equal(a: Any, b: Any) -> bool:
    """Equal as Go objects: a null or empty list field is the same as an absent one."""
    return _normalized(a) == _normalized(b)


def show(value: Any) -> str:
    """A bad value as kube prints it: strings quoted, numbers and booleans bare, objects as JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


@attrs.define
class FieldErrors:
    """The causes of one 422 Invalid response, collected field by field."""

    causes: list[dict[str, str]] = attrs.field(factory=list)

    def _add(self, reason: str, field: str, message: str, detail: str = "") -> None:
        self.causes.append({"reason": reason, "message": f"{message}: {detail}" if detail else message, "field": field})

    def required(self, field: str, detail: str = "") -> None:
        self._add("FieldValueRequired", field, "Required value", detail)

    def invalid(self, field: str, value: Any, detail: str) -> None:
        self._add("FieldValueInvalid", field, f"Invalid value: {show(value)}", detail)

    def not_supported(self, field: str, value: Any, supported: tuple[str, ...]) -> None:
        listed = ", ".join(json.dumps(option) for option in supported)
        self._add("FieldValueNotSupported", field, f"Unsupported value: {show(value)}", f"supported values: {listed}")

    def forbidden(self, field: str, detail: str) -> None:
        self._add("FieldValueForbidden", field, "Forbidden", detail)

    def duplicate(self, field: str, value: Any) -> None:
        self._add("FieldValueDuplicate", field, f"Duplicate value: {show(value)}")

    def not_found(self, field: str, value: Any, detail: str = "") -> None:
        self._add("FieldValueNotFound", field, f"Not found: {show(value)}", detail)

    def too_long(self, field: str, max_bytes: int) -> None:
        self._add("FieldValueTooLong", field, "Too long", f"may not be more than {max_bytes} bytes")

    def too_many(self, field: str, actual: int, maximum: int) -> None:
        self._add("FieldValueTooMany", field, f"Too many: {actual}", f"must have at most {maximum} items")

    def immutable(self, field: str, value: Any, old_value: Any) -> None:
        """Invalid when an update changed a field that may only be set once."""
        if not semantic_equal(value, old_value):
            self.invalid(field, value, "field is immutable")

    def each_invalid(self, field: str, value: Any, details: list[str]) -> None:
        """One Invalid cause per detail (how kube reports a name failing several format rules)."""
        for detail in details:
            self.invalid(field, value, detail)

    def to_error(self, kind: str, group: str, name: str) -> ApiError | None:
        """The 422 Invalid error for these causes, or None when there are none."""
        if not self.causes:
            return None
        unique = list({(c["field"], c["message"]): c for c in self.causes}.values())
        return invalid(kind, group, name, unique)


def check_set(
    items: list[Any],
    field: str,
    maximum: int | None,
    check_item: Callable[[Any, str], None],
    errors: FieldErrors,
    key: Callable[[Any], Hashable] | None = None,
) -> None:
    """At most ``maximum`` items (None: any number), each valid, and (with ``key``) no two with the same key.

    Too many items is the only error then: checking each of a huge list is what the limit prevents.
    """
    if maximum is not None and len(items) > maximum:
        errors.too_many(field, len(items), maximum)
        return
    for index, item in enumerate(items):
        check_item(item, f"{field}[{index}]")
    if key is None:
        return
    seen: set[Hashable] = set()
    for index, item in enumerate(items):
        item_key = key(item)
        if item_key in seen:
            errors.duplicate(f"{field}[{index}]", item_key)
        seen.add(item_key)

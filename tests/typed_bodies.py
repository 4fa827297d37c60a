"""Mistyped and odd request bodies, each with kube-apiserver 1.36's answer to it.

The unit tests hold the embedded API server to these answers; the interop tier sends every body
to a real kube-apiserver too and checks that both answer alike. Bodies are raw bytes: NaN,
duplicate keys and invalid UTF-8 cannot be written by ``json.dumps``.
"""

from __future__ import annotations

import attrs

CONFIG_MAPS = "/api/v1/namespaces/default/configmaps"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
JSON = "application/json"


@attrs.frozen
class Case:
    """A POST of ``body`` to ``path`` and what kube-apiserver answers: code, reason, message start, warnings."""

    id: str
    path: str
    body: bytes
    code: int
    reason: str = ""
    message: str = ""
    warnings: tuple[str, ...] = ()

    def named(self, suffix: str) -> Case:
        """The same case for an object whose name ends with ``suffix`` (cluster-scoped names are shared)."""
        return attrs.evolve(self, body=self.body.replace(b"NAME", f"{self.id}{suffix}".encode()))


def config_map(data: bytes, metadata: bytes = b'"name":"NAME"') -> bytes:
    return b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{' + metadata + b'},"data":' + data + b"}"


def resource_slice(
    device: bytes = b'{"name":"d"}', pool: bytes = b'{"name":"p","generation":1,"resourceSliceCount":1}'
) -> bytes:
    return (
        b'{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"NAME"},'
        b'"spec":{"driver":"gpu.example.com","nodeName":"node-a","pool":' + pool + b',"devices":[' + device + b"]}}"
    )


def cannot_handle(kind: str, reason: str) -> str:
    return f'{kind} in version "v1" cannot be handled as a {kind}: {reason}'


def unmarshal(kind: str, what: str, field: str, go_type: str) -> str:
    return cannot_handle(kind, f"json: cannot unmarshal {what} into Go struct field {field} of type {go_type}")


CASES = (
    Case(
        "cm-nan",
        CONFIG_MAPS,
        config_map(b'{"a":NaN}'),
        400,
        "BadRequest",
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind;"
        " json parse error: invalid character 'N' looking for beginning of value",
    ),
    Case(
        "cm-float",
        CONFIG_MAPS,
        config_map(b'{"a":1.5}'),
        400,
        "BadRequest",
        unmarshal("ConfigMap", "number", "ConfigMap.data", "string"),
    ),
    Case(
        "rs-name-number",
        SLICES,
        resource_slice(device=b'{"name":5}'),
        400,
        "BadRequest",
        unmarshal("ResourceSlice", "number", "Device.spec.devices.name", "string"),
    ),
    Case(
        "rs-bad-quantity",
        SLICES,
        resource_slice(device=b'{"name":"d","capacity":{"memory":{"value":"abc"}}}'),
        400,
        "BadRequest",
        cannot_handle(
            "ResourceSlice",
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
    ),
    Case(
        "rs-devices-object",
        SLICES,
        resource_slice().replace(b'"devices":[{"name":"d"}]', b'"devices":{"name":"a"}'),
        400,
        "BadRequest",
        unmarshal("ResourceSlice", "object", "ResourceSliceSpec.spec.devices", "[]v1.Device"),
    ),
    Case(
        "rs-count-string",
        SLICES,
        resource_slice(pool=b'{"name":"p","generation":1,"resourceSliceCount":"1"}'),
        400,
        "BadRequest",
        unmarshal("ResourceSlice", "string", "ResourcePool.spec.pool.resourceSliceCount", "int64"),
    ),
    Case(
        "rs-count-fraction",
        SLICES,
        resource_slice(pool=b'{"name":"p","generation":1,"resourceSliceCount":1.5}'),
        400,
        "BadRequest",
        unmarshal("ResourceSlice", "number 1.5", "ResourcePool.spec.pool.resourceSliceCount", "int64"),
    ),
    Case(
        "rs-count-exponent",
        SLICES,
        resource_slice(pool=b'{"name":"p","generation":1,"resourceSliceCount":1e3}'),
        400,
        "BadRequest",
        unmarshal("ResourceSlice", "number 1e3", "ResourcePool.spec.pool.resourceSliceCount", "int64"),
    ),
    Case(
        "rs-attribute-int-string",
        SLICES,
        resource_slice(device=b'{"name":"d","attributes":{"a":{"int":"7"}}}'),
        400,
        "BadRequest",
        unmarshal("ResourceSlice", "string", "DeviceAttribute.spec.devices.attributes.int", "int64"),
    ),
    Case(
        "cm-label-number",
        CONFIG_MAPS,
        config_map(b'{"a":"x"}', b'"name":"NAME","labels":{"x":7}'),
        400,
        "BadRequest",
        unmarshal("ConfigMap", "number", "ObjectMeta.metadata.labels", "string"),
    ),
    Case(
        "cm-metadata-number",
        CONFIG_MAPS,
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":5}',
        400,
        "BadRequest",
        unmarshal("ConfigMap", "number", "ConfigMap.metadata", "v1.ObjectMeta"),
    ),
    Case(
        "cm-bad-base64",
        CONFIG_MAPS,
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME"},"binaryData":{"a":"!!!!"}}',
        400,
        "BadRequest",
        cannot_handle("ConfigMap", "illegal base64 data at input byte 0"),
    ),
    Case(
        "quantity-error-wins",
        SLICES,
        resource_slice(
            device=b'{"name":5},{"name":"e","capacity":{"m":{"value":"abc"}}}',
            pool=b'{"name":"p","generation":1,"resourceSliceCount":1.5}',
        ),
        400,
        "BadRequest",
        cannot_handle(
            "ResourceSlice",
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
    ),
    Case("cm-invalid-utf8", CONFIG_MAPS, config_map(b'{"a":"x\xff\xe2\x82y"}'), 201),
    Case("cm-lone-surrogate", CONFIG_MAPS, config_map(b'{"a":"x\\ud800y\\ud83d\\ude00"}'), 201),
    Case(
        "cm-duplicate-name",
        CONFIG_MAPS,
        config_map(b'{"a":"x"}', b'"name":"first","name":"NAME"'),
        201,
        warnings=('299 - "duplicate field \\"metadata.name\\""',),
    ),
    Case(
        "rs-unknown-and-duplicate",
        SLICES,
        resource_slice(device=b'{"name":"d","bogus":1,"attributes":{"a":{"int":1,"zz":2}},"name":"e"}'),
        201,
        warnings=(
            '299 - "unknown field \\"spec.devices[0].bogus\\""',
            '299 - "unknown field \\"spec.devices[0].attributes.a.zz\\""',
            '299 - "duplicate field \\"spec.devices[0].name\\""',
        ),
    ),
    Case(
        "rs-strict",
        SLICES + "?fieldValidation=Strict",
        resource_slice(device=b'{"name":"d","bogus":1,"name":"e"}'),
        400,
        "BadRequest",
        cannot_handle(
            "ResourceSlice",
            'strict decoding error: unknown field "spec.devices[0].bogus", duplicate field "spec.devices[0].name"',
        ),
    ),
)
"""The rows of the issue and their neighbours, each answered as kube-apiserver 1.36.2 answers it."""

PATCH_CASES = (
    ("application/merge-patch+json", b'{"data":{"a":5}}', 422, "Invalid"),
    ("application/json-patch+json", b'[{"op":"add","path":"/data/a","value":5}]', 422, "Invalid"),
    ("application/strategic-merge-patch+json", b'{"data":{"a":5}}', 422, "Invalid"),
    (
        "application/apply-patch+yaml",
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME"},"data":{"a":5}}',
        500,
        "",
    ),
    (
        "application/apply-patch+yaml",
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME","unexpected":null},"datax":{"a":"b"}}',
        500,
        "",
    ),
)
"""Patches of a ConfigMap whose result has a number for a string, and an apply with fields its type does not
have: (content type, body, code, reason)."""

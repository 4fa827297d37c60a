"""Content negotiation: which representation a client asked for, and how its body is encoded.

kube-apiserver picks a response shape from the ``Accept`` header: a plain object, a
``meta.k8s.io`` Table (kubectl's human output), PartialObjectMetadata (metadata-only
informers) or aggregated discovery, and an encoding: JSON, YAML, or Kubernetes protobuf, which
client-go programs (drivers on the kubeletplugin helper, kube-scheduler, kube-controller-manager)
prefer for objects, metadata views, errors and watches. Tables have no protobuf form: a client
asking for a Table only in protobuf gets 406, as from kube-apiserver.
"""

from __future__ import annotations

import enum
import json
from typing import Any

import attrs
import yaml

from kubelet_dra.peers.apiserver import jsonbody, yamlbody
from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.kubeproto import mapping

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
META_GROUP = "meta.k8s.io"
DISCOVERY_GROUP = "apidiscovery.k8s.io"
AGGREGATED_DISCOVERY = f"{JSON};g={DISCOVERY_GROUP};v=v2;as=APIGroupDiscoveryList"

_JSON_LIKE = frozenset({JSON, "*/*", "application/*"})
_META_VERSIONS = ("v1", "v1beta1")


class Shape(enum.Enum):
    """What the response body holds for a resource request."""

    OBJECT = "object"
    TABLE = "Table"
    METADATA = "PartialObjectMetadata"


@attrs.frozen
class MediaType:
    """One entry of an Accept or Content-Type header: ``type/subtype;key=value``."""

    base: str
    params: dict[str, str] = attrs.field(factory=dict, hash=False)

    @classmethod
    def parse(cls, text: str) -> MediaType:
        base, *rest = text.split(";")
        params: dict[str, str] = {}
        for item in rest:
            key, _, value = item.partition("=")
            if key.strip():
                params[key.strip().lower()] = value.strip().strip('"')
        return cls(base.strip().lower(), params)


@attrs.frozen
class Rendering:
    """The negotiated response: its shape, ``meta.k8s.io`` version (Table/metadata) and encoding."""

    shape: Shape = Shape.OBJECT
    meta_version: str = "v1"
    yaml: bool = False
    protobuf: bool = False

    @property
    def content_type(self) -> str:
        if self.protobuf:
            return PROTOBUF
        if self.shape is not Shape.OBJECT:
            return f"{JSON};as={self.shape.value};v={self.meta_version};g={META_GROUP}"
        return YAML if self.yaml else JSON

    @property
    def stream_content_type(self) -> str:
        """A watch stream's Content-Type: protobuf frames are marked as a stream, JSON lines are not."""
        return f"{PROTOBUF};stream=watch" if self.protobuf else self.content_type

    @property
    def meta_api_version(self) -> str:
        return f"{META_GROUP}/{self.meta_version}"

    def encode(self, document: Any) -> bytes:
        if self.protobuf:
            return mapping.encode(document)
        if self.yaml:
            return yaml.safe_dump(document, sort_keys=False).encode()
        return encode_json(document)


JSON_RENDERING = Rendering()
PROTOBUF_RENDERING = Rendering(protobuf=True)


def encode_json(document: Any) -> bytes:
    """Compact JSON, the way kube-apiserver writes it (no spaces, UTF-8)."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


def accepted(header: str | None) -> list[MediaType]:
    """The Accept header's media types, most preferred first (q-values honoured, order kept on ties)."""
    if not header or not header.strip():
        return [MediaType(JSON)]
    types = [MediaType.parse(part) for part in header.split(",") if part.strip()]
    return sorted(types, key=lambda media: -_quality(media))


def _quality(media: MediaType) -> float:
    try:
        return float(media.params.get("q", "1"))
    except ValueError:
        return 1.0


def not_acceptable() -> ApiError:
    return ApiError(
        406,
        "NotAcceptable",
        f"only the following media types are accepted: {JSON}, {YAML}, {PROTOBUF}",
    )


def negotiate_resource(header: str | None, *, streaming: bool = False) -> Rendering:
    """The rendering for a resource request; 406 NotAcceptable when nothing we serve is acceptable.

    ``streaming`` (watch) excludes YAML, which kube-apiserver does not stream either.
    """
    for media in accepted(header):
        as_kind = media.params.get("as")
        if as_kind:
            rendering = _meta_rendering(media, as_kind)
            if rendering is not None:
                return rendering
            continue
        if media.base in _JSON_LIKE:
            return JSON_RENDERING
        if media.base == PROTOBUF:
            return PROTOBUF_RENDERING
        if media.base == YAML and not streaming:
            return Rendering(yaml=True)
    raise not_acceptable()


def _meta_rendering(media: MediaType, as_kind: str) -> Rendering | None:
    if media.base not in (JSON, PROTOBUF) or media.params.get("g") != META_GROUP:
        return None
    version = media.params.get("v", "")
    if version not in _META_VERSIONS:
        return None
    protobuf = media.base == PROTOBUF
    if as_kind == "Table":
        return None if protobuf else Rendering(Shape.TABLE, version)
    if as_kind in ("PartialObjectMetadata", "PartialObjectMetadataList"):
        return Rendering(Shape.METADATA, version, protobuf=protobuf)
    return None


def error_rendering(header: str | None) -> Rendering:
    """How a failure's Status is sent: in protobuf when the client prefers it, else JSON."""
    try:
        rendering = negotiate_resource(header)
    except ApiError:
        return JSON_RENDERING
    return PROTOBUF_RENDERING if rendering.protobuf else JSON_RENDERING


def wants_aggregated_discovery(header: str | None) -> bool:
    """True when the client prefers the apidiscovery.k8s.io/v2 document over the legacy one."""
    for media in accepted(header):
        if media.params.get("as") == "APIGroupDiscoveryList":
            if media.params.get("g") == DISCOVERY_GROUP and media.params.get("v") == "v2":
                return True
            continue
        if media.base in _JSON_LIKE or media.base == PROTOBUF:
            return False
    raise not_acceptable()


def unsupported_media_type() -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {JSON}, {YAML}, {PROTOBUF}",
    )


def body_media_type(content_type: str | None) -> str:
    """The bare media type of a request body (parameters such as charset dropped)."""
    return MediaType.parse(content_type or JSON).base


def decode_object(content_type: str | None, body: bytes, kind: str) -> dict[str, Any]:
    """A request body (JSON, YAML or protobuf) holding a ``kind`` as a JSON object.

    415 for other media types, 400 when malformed (in kube-apiserver's words for protobuf).
    """
    media = body_media_type(content_type)
    if media == PROTOBUF:
        try:
            return mapping.decode(body)
        except mapping.ProtobufError as err:
            raise ApiError(
                400, "BadRequest", f"the object provided is unrecognized (must be of type {kind}): {err}"
            ) from err
    if media not in (JSON, YAML):
        raise unsupported_media_type()
    try:
        document = jsonbody.loads(body) if media == JSON else yamlbody.loads(body)
    except (ValueError, yaml.YAMLError) as err:
        parser = "json" if media == JSON else "yaml"
        raise ApiError(
            400,
            "BadRequest",
            f"the object provided is unrecognized (must be of type {kind}): couldn't get version/kind;"
            f" {parser} parse error: {err}",
        ) from err
    if not isinstance(document, dict):
        raise ApiError(400, "BadRequest", "the request body must be a JSON object")
    return document

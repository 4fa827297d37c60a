"""What a call made by hand sends: the method a user names, and its request from JSON or from claim names.

The ``.proto`` files are built in (drivers serve no reflection), so a request is checked against
its message type before anything is dialled; claims named without a UID are read from the API
server, as the kubelet takes them from the pod's claims.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from google.protobuf import json_format
from google.protobuf.message import Message

from kubelet_dra.peers.api import dra_v1_pb2
from kubelet_dra.peers.api import pluginregistration_pb2 as registration_pb2
from kubelet_dra.peers.api.services import DRA_HEALTH_V1ALPHA1, DRA_V1, REGISTRATION, Service
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.workbench.testbed import objects

GET_INFO = "GetInfo"
NOTIFY = "NotifyRegistrationStatus"
PREPARE = "NodePrepareResources"
UNPREPARE = "NodeUnprepareResources"
WATCH = "NodeWatchResources"
METHODS: dict[str, str] = {
    "info": GET_INFO,
    "notify": NOTIFY,
    "prepare": PREPARE,
    "unprepare": UNPREPARE,
    "watch": WATCH,
}
"""Short names → the methods; the full names are accepted too, in any case."""
KNOWN = (GET_INFO, NOTIFY, PREPARE, UNPREPARE, WATCH)


def method_name(text: str) -> str:
    """The method ``text`` names (``prepare``, ``NodePrepareResources``…)."""
    wanted = text.lower()
    for name in KNOWN:
        if wanted == name.lower():
            return name
    if wanted in METHODS:
        return METHODS[wanted]
    raise UsageError(
        f"unknown method {text!r}", fix=f"use one of {', '.join(METHODS)} or their full names ({', '.join(KNOWN)})"
    )


def _service_of(method: str) -> Service:
    if method in (GET_INFO, NOTIFY):
        return REGISTRATION
    return DRA_HEALTH_V1ALPHA1 if method == WATCH else DRA_V1


def request_class(method: str) -> type[Message]:
    service = _service_of(method)
    return service.message_class(service.descriptor.methods_by_name[method].input_type.name)


def response_class(method: str) -> type[Message]:
    service = _service_of(method)
    return service.message_class(service.descriptor.methods_by_name[method].output_type.name)


def request_from_json(method: str, text: str, where: str) -> Message:
    """The request of ``method`` from protobuf JSON (field names as in the ``.proto`` or camelCase)."""
    message = request_class(method)()
    try:
        json_format.Parse(text or "{}", message)
    except json_format.ParseError as err:
        raise UsageError(
            f"not a {message.DESCRIPTOR.name} in JSON: {' '.join(str(err).split())}",
            where=where,
            fix=f"write the request as JSON, e.g. {json_format.MessageToJson(_example(method), indent=None)}",
        ) from err
    return message


def _example(method: str) -> Message:
    if method in (PREPARE, UNPREPARE):
        claim = dra_v1_pb2.Claim(namespace="default", name="my-claim", uid="<uid>")
        return request_class(method)(claims=[claim])
    if method == NOTIFY:
        return registration_pb2.RegistrationStatus(plugin_registered=False, error="why")
    return request_class(method)()


def parse_claim(text: str) -> tuple[str, str, str]:
    """``NAMESPACE/NAME[/UID]`` → (namespace, name, uid or "")."""
    parts = text.split("/")
    if len(parts) not in (2, 3) or not all(parts):
        raise UsageError(
            f"--claim {text!r} is not NAMESPACE/NAME or NAMESPACE/NAME/UID",
            fix="e.g. --claim default/gpu-claim (its UID is read from the API server) or default/gpu-claim/<uid>",
        )
    namespace, name, uid = (*parts, "")[:3]
    return namespace, name, uid


async def claims_request(method: str, specs: Sequence[str], kube: Callable[[], KubeClient]) -> Message:
    """The prepare or unprepare request for ``specs``; UIDs not given are read from the API server."""
    claims = []
    for spec in specs:
        namespace, name, uid = parse_claim(spec)
        if not uid:
            stored = await objects.get(kube(), "ResourceClaim", name, namespace)
            if stored is None:
                raise UsageError(
                    f"ResourceClaim {namespace}/{name} does not exist on the API server",
                    fix="check the name, or give its UID (NAMESPACE/NAME/UID) to call without one",
                )
            uid = stored["metadata"]["uid"]
        claims.append(dra_v1_pb2.Claim(namespace=namespace, name=name, uid=uid))
    return request_class(method)(claims=claims)

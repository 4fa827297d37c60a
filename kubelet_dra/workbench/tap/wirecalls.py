"""How the wire knobs act on one call through the tap: what the kubelet sees is what the reference driver shows.

In the reference driver's order (``peers/driver/registration.py``, ``preparer.py``): a call is first held (a
delay, then a block until its knob is cleared, counted in ``WireFaults.blocked``; the caller's deadline still
ends it), then failed as a whole with the driver's status and text (UNKNOWN, ``prepare resource claims: …``)
without reaching the driver, or forwarded with the claims a knob fails left out, and its answer changed. What the
tap records is the answer as the knobs made it. The DRA services a knob does not serve are answered as a gRPC
server answers a method it does not have.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import attrs
import grpc
from google.protobuf.message import DecodeError, Message

from kubelet_dra.peers.api import pluginregistration_pb2 as registration_pb2
from kubelet_dra.peers.api.calls import message_json
from kubelet_dra.peers.api.services import DRA_SERVICES, REGISTRATION, full_method
from kubelet_dra.peers.driver.versions import SERVED
from kubelet_dra.peers.log import Logger
from kubelet_dra.workbench.tap.faults import WireFaults, unsupported
from kubelet_dra.workbench.tap.methods import KNOWN_METHODS

GET_INFO = REGISTRATION.method_path("GetInfo")
NOTIFY = REGISTRATION.method_path("NotifyRegistrationStatus")
PREPARE, UNPREPARE = "NodePrepareResources", "NodeUnprepareResources"
DRA_METHODS = {path: path.rsplit("/", 1)[1] for service in DRA_SERVICES for path in service.method_paths}
"""The DRA node services' method paths (their wire names) → the method's name."""
ERRORS = {
    PREPARE: ("prepare-error", "prepare resource claims"),
    UNPREPARE: ("unprepare-error", "unprepare resource claims"),
}
"""The knob that fails a DRA call as a whole, and the words the reference driver puts before its text."""
HOLDS = {PREPARE: ("prepare-delay", "prepare-block"), UNPREPARE: (None, "unprepare-block")}


@attrs.frozen
class Ending:
    """How the tap ends a call in the driver's place: an injected error, or (``answer``) an answer made without it."""

    code: grpc.StatusCode = grpc.StatusCode.OK
    details: str = ""
    answer: bytes | None = None


class WireCall:
    """The knobs acting on one call: ``target``, then ``before``, each answer through ``answer``, then ``ended``."""

    def __init__(self, method: str, faults: WireFaults, log: Logger) -> None:
        self.method = method
        self._faults = faults
        self._log = log
        self._request: Message | None = None
        self._claims: dict[str, str] = {}
        """Claim UID → name of the claims the kubelet asked to prepare."""
        self._failed: dict[str, str] = {}
        """Claim UID → the error ``prepare-fail-claim`` gives it."""
        self.target = self._route()
        """The method path to call on the driver; None when the knobs do not serve the caller's."""

    def _route(self) -> str | None:
        """``versions`` and ``serve-advertised-name``: the DRA services served, and under which names."""
        by_advertised_name = self._faults.get("serve-advertised-name")
        versions = self._faults.get("versions") if self._effective("versions") else "all"
        served = SERVED[versions]
        for service in DRA_SERVICES:
            for name in service.methods:
                if self.method == full_method(service.wire_name, name):
                    return self.method if service in served and not by_advertised_name else None
                if self.method == full_method(service.advertised, name):
                    return full_method(service.wire_name, name) if service in served and by_advertised_name else None
        return self.method

    async def before(self, requests: list[bytes] | AsyncIterator[bytes]) -> tuple[Any, Ending | None]:
        """Hold the call, then fail it or change its request; the request to forward, or how the call ends."""
        target = self.target or self.method
        name = DRA_METHODS.get(target)
        if self.method == GET_INFO:
            await asyncio.sleep(self._faults.get("getinfo-delay"))
            if error := self._faults.get("getinfo-error"):
                return requests, self._inject(error)
        if self.method == NOTIFY and isinstance(requests, list) and len(requests) == 1:
            self._request = _decode(registration_pb2.RegistrationStatus, requests[0])
        if name not in HOLDS:
            return requests, None
        delay, block = HOLDS[name]
        await asyncio.sleep(self._faults.get(delay) if delay else 0.0)
        self._faults.blocked[name] += 1
        try:
            await self._faults.wait_until_off(block)
        finally:
            self._faults.blocked[name] -= 1
        knob, words = ERRORS[name]
        if error := self._faults.get(knob):
            return requests, self._inject(f"{words}: {error}")
        if name == PREPARE and isinstance(requests, list) and len(requests) == 1:
            return self._prepare_request(target, requests[0])
        return requests, None

    def answer(self, data: bytes) -> bytes:
        """One answer of the driver as the knobs change it."""
        target = self.target or self.method
        if self.method == GET_INFO:
            info = _decode(registration_pb2.PluginInfo, data)
            return data if info is None else self._info(info).SerializeToString()
        if DRA_METHODS.get(target) != PREPARE:
            return data
        response = _decode(KNOWN_METHODS[target].response, data)
        return data if response is None else self._prepared(response).SerializeToString()

    def ended(self, code: grpc.StatusCode, details: str) -> tuple[grpc.StatusCode, str]:
        """The status the caller gets once the driver answered (``notify-error``); ``exit-after-registration``
        stops the driver after a registration the kubelet accepted, as the reference driver stops itself."""
        registered = self.method == NOTIFY and self._request is not None and self._request.plugin_registered
        if not registered:
            return code, details
        if error := self._faults.get("notify-error"):
            ending = self._inject(error)
            return ending.code, ending.details
        if code is grpc.StatusCode.OK and self._faults.get("exit-after-registration") and self._faults.stop_driver:
            self._log.info("Stopping the driver after registration (fault exit-after-registration)")
            self._faults.stop_driver()
        return code, details

    def _effective(self, knob: str) -> bool:
        """Whether ``knob`` is set and the tap can carry it out for this driver (said when it cannot)."""
        if not self._faults.is_set(knob):
            return False
        reason = unsupported(knob, self._faults.get(knob), self._faults.driver_info)
        if reason is not None:
            self._log.error("Fault not carried out", reason, knob=knob)
        return reason is None

    def _inject(self, details: str) -> Ending:
        self._log.info("Injected fault", status=grpc.StatusCode.UNKNOWN.name, details=details)
        return Ending(grpc.StatusCode.UNKNOWN, details)

    def _prepare_request(self, target: str, data: bytes) -> tuple[Any, Ending | None]:
        """The claims asked for; ``prepare-fail-claim``: the driver is not asked for the claim, the answer gets its
        error."""
        request = _decode(KNOWN_METHODS[target].request, data)
        if request is None:
            return [data], None
        self._claims = {claim.uid: claim.name for claim in request.claims}
        failing = self._faults.get("prepare-fail-claim")
        kept = []
        for claim in request.claims:
            if failing and failing in (claim.name, claim.uid):
                self._failed[claim.uid] = (
                    f"injected failure (fault prepare-fail-claim) for claim {claim.namespace}/{claim.name}"
                )
            else:
                kept.append(claim)
        if not self._failed:
            return [data], None
        if not kept:
            return [], Ending(answer=KNOWN_METHODS[target].response().SerializeToString())
        del request.claims[:]
        request.claims.extend(kept)
        return [request.SerializeToString()], None

    def _info(self, info: registration_pb2.PluginInfo) -> registration_pb2.PluginInfo:
        self._faults.driver_info = message_json(info)
        if kind := self._faults.get("getinfo-type"):
            info.type = kind
        if endpoint := self._faults.get("getinfo-endpoint"):
            info.endpoint = endpoint
        if self._effective("versions"):
            versions = self._faults.get("versions")
            offered = {service.advertised for service in SERVED[versions]}
            dra = {service.advertised for service in DRA_SERVICES}
            kept = [version for version in info.supported_versions if version not in dra or version in offered]
            info.supported_versions[:] = [] if versions == "none" else kept
        return info

    def _prepared(self, response: Any) -> Any:
        """The reference driver's order: failed claims answered, one left out, an unknown one added, IDs bared."""
        for uid, error in self._failed.items():
            response.claims[uid].error = error
        if omit := self._faults.get("prepare-omit-claim"):
            for uid in [uid for uid, name in self._claims.items() if omit in (uid, name)]:
                if uid in response.claims:
                    del response.claims[uid]
        if self._faults.get("prepare-unknown-key"):
            response.claims.get_or_create(str(uuid.uuid4()))
        if self._faults.get("cdi-unqualified"):
            for claim in response.claims.values():
                for device in claim.devices:
                    device.cdi_device_ids[:] = [cdi_id.rpartition("=")[2] for cdi_id in device.cdi_device_ids]
        return response


def _decode(message_class: type[Message], data: bytes) -> Any:
    """The message, or None when the bytes are not one (the kubelet then gets them as they are)."""
    try:
        return message_class.FromString(data)
    except DecodeError:
        return None

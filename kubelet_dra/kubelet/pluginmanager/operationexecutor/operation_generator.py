"""One register attempt and one unregister, step by step as the kubelet does them (docs/protocol.md#registration).

The registration socket is dialled anew for every attempt (blocking, ≤10 s), asked ``GetInfo``
(≤1 s), validated by the handler for the plugin's type, registered, and told the outcome with
``NotifyRegistrationStatus`` (≤5 s). Every failure carries the kubelet's exact message and a
``Diagnosis``, made by ``pluginmanager/diagnosis.py``: the steps here say what the kubelet does, not why a
driver failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import NoReturn, Protocol, TypeVar

import attrs
import grpc
from google.protobuf.message import Message

from kubelet_dra.kubelet.pluginmanager import diagnosis
from kubelet_dra.kubelet.pluginmanager.cache.state_of_world import ActualStateOfWorld, DesiredPlugin, RegisteredPlugin
from kubelet_dra.kubelet.pluginmanager.cache.types import PluginHandler
from kubelet_dra.kubelet.pluginmanager.diagnosis import Diagnosis
from kubelet_dra.kubelet.pluginmanager.operationexecutor.operation_executor import OperationFailed
from kubelet_dra.peers.api import pluginregistration_pb2 as registration_pb2
from kubelet_dra.peers.api.calls import CallRecord, CallRecorder, message_json, next_request_id
from kubelet_dra.peers.api.goformat import go_rpc_error
from kubelet_dra.peers.api.services import REGISTRATION
from kubelet_dra.peers.gotext import go_quote, go_quote_list
from kubelet_dra.peers.log import Logger

_Response = TypeVar("_Response", bound=Message)


class RegistrationStub(Protocol):
    """The two calls of ``pluginregistration.Registration`` the kubelet makes (grpc's generated stub is untyped)."""

    def GetInfo(
        self, request: registration_pb2.InfoRequest, *, timeout: float
    ) -> Awaitable[registration_pb2.PluginInfo]: ...

    def NotifyRegistrationStatus(
        self, request: registration_pb2.RegistrationStatus, *, timeout: float
    ) -> Awaitable[registration_pb2.RegistrationStatusResponse]: ...


PREFIX = "RegisterPlugin error -- "

DIAL_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 10),
    ("grpc.min_reconnect_backoff_ms", 10),
    ("grpc.max_reconnect_backoff_ms", 200),
)
"""Connect retries inside the 10 s dial budget. A driver's socket file appears (bind) a moment before
it accepts connections (listen); with gRPC's default 1 s reconnect backoff that moment would cost a
whole second, so the dial retries every few milliseconds instead. The budget itself is the kubelet's."""


@attrs.frozen
class HandshakeTimeouts:
    dial: float = 10.0
    get_info: float = 1.0
    notify: float = 5.0


DEFAULT_TIMEOUTS = HandshakeTimeouts()


class RegistrationFailed(OperationFailed):
    """A register attempt failed; ``str()`` is the kubelet's error for the attempt."""

    def __init__(self, message: str, diagnosis: Diagnosis) -> None:
        super().__init__(message)
        self.diagnosis = diagnosis


def wrong_type_error(info: registration_pb2.PluginInfo, endpoint: str, versions: list[str], path: str) -> str:
    """The real kubelet's refusal of a plugin type other than DRAPlugin: a CSIPlugin goes to its CSI handler, which
    finds no CSI version it can parse among DRA service names (seen on kubelet 1.36.2); any other type has no
    handler at all."""
    if info.type != "CSIPlugin" or not versions:
        return f"no handler registered for plugin type: {info.type} at socket {path}"
    return (
        f"plugin validation failed with err: validation failed for CSI Driver {info.name} at endpoint {endpoint}:"
        f" kubernetes.io/csi: ValidatePlugin for CSI driver {go_quote(info.name)} failed. None of the versions"
        f" specified {go_quote_list(versions)} are supported. err=could not find a highest supported version from"
        f" versions ([{' '.join(versions)}]) reported: illegal version string {go_quote(versions[0])}"
    )


def _with_rpc_error(message: str, rpc_error: str | None) -> str:
    """The kubelet's notify result: the message, followed by the notify call's own error if it failed."""
    return message if rpc_error is None else f"{message}: {rpc_error}"


class Handshake:
    """The register and unregister operations for one plugin manager."""

    def __init__(
        self,
        *,
        handlers: Mapping[str, PluginHandler],
        actual: ActualStateOfWorld,
        timeouts: HandshakeTimeouts,
        log: Logger,
        recorder: CallRecorder | None = None,
    ) -> None:
        self._handlers = handlers
        self._actual = actual
        self._timeouts = timeouts
        self._log = log
        self._recorder = recorder

    async def register(self, plugin: DesiredPlugin) -> None:
        """One attempt, as the kubelet's ``GenerateRegisterPluginFunc``: each step fails the attempt with the
        kubelet's error and tells the plugin why, except the dial and ``GetInfo``, which have no one to tell."""
        path = plugin.socket_path
        async with self._dial(path) as stub:
            info = await self._get_info(stub, path)
            handler = await self._handler_for(stub, path, info)
            await self._validate(stub, path, handler, info)
            await self._add_and_register(stub, plugin, handler, info)
            await self._notify_registered(stub, path, handler, info)
        endpoint = _endpoint(info, path)
        self._log.v(2).info("Registered plugin", socket=path, name=info.name, endpoint=endpoint, type=info.type)

    async def unregister(self, plugin: RegisteredPlugin) -> None:
        """Forget the plugin; like the kubelet, without contacting it."""
        self._actual.remove(plugin.socket_path)
        await plugin.handler.deregister_plugin(plugin.name, plugin.endpoint)
        self._log.v(4).info("DeRegisterPlugin called", socket=plugin.socket_path, pluginName=plugin.name)

    @contextlib.asynccontextmanager
    async def _dial(self, path: str) -> AsyncIterator[RegistrationStub]:
        channel = grpc.aio.insecure_channel(f"unix:{path}", options=DIAL_OPTIONS)
        try:
            try:
                await asyncio.wait_for(channel.channel_ready(), self._timeouts.dial)
            except TimeoutError:
                message = (
                    f"{PREFIX}dial failed at socket {path}, err: failed to dial socket {path},"
                    " err: context deadline exceeded"
                )
                raise RegistrationFailed(message, await diagnosis.dial_failed(path, message)) from None
            stub: RegistrationStub = REGISTRATION.stub(channel)
            yield stub
        finally:
            await channel.close()

    async def _get_info(self, stub: RegistrationStub, path: str) -> registration_pb2.PluginInfo:
        try:
            return await self._call(
                stub.GetInfo, "GetInfo", registration_pb2.InfoRequest(), path, self._timeouts.get_info
            )
        except grpc.aio.AioRpcError as err:
            message = f"{PREFIX}failed to get plugin info using RPC GetInfo at socket {path}, err: {go_rpc_error(err)}"
            raise RegistrationFailed(message, diagnosis.get_info_failed(path, message, err)) from err

    async def _handler_for(self, stub: RegistrationStub, path: str, info: registration_pb2.PluginInfo) -> PluginHandler:
        """The handler for the plugin's type; a type without one is refused (the kubelet has only DRA's and CSI's)."""
        handler = self._handlers.get(info.type)
        if handler is None:
            versions = list(info.supported_versions)
            message = f"{PREFIX}{wrong_type_error(info, _endpoint(info, path), versions, path)}"
            await self._reject(stub, path, message, diagnosis.wrong_type(path, message, info.type))
        return handler

    async def _validate(
        self, stub: RegistrationStub, path: str, handler: PluginHandler, info: registration_pb2.PluginInfo
    ) -> None:
        """The handler's ``ValidatePlugin``: before anything is stored, so a refused plugin leaves no trace."""
        versions = list(info.supported_versions)
        try:
            handler.validate_plugin(info.name, _endpoint(info, path), versions)
        except Exception as err:  # a handler rejects with any exception; its text is the kubelet's
            message = f"{PREFIX}plugin validation failed with err: {err}"
            await self._reject(stub, path, message, diagnosis.validation_refused(path, message, versions))

    async def _add_and_register(
        self, stub: RegistrationStub, plugin: DesiredPlugin, handler: PluginHandler, info: registration_pb2.PluginInfo
    ) -> None:
        """Into the actual state of the world first, as the kubelet does, so the reconciler sees the socket as
        registered while the handler connects; taken out again when the handler refuses."""
        path = plugin.socket_path
        endpoint = _endpoint(info, path)
        self._actual.add(RegisteredPlugin(path, plugin.uuid, plugin.timestamp, handler, info.name, endpoint))
        try:
            await handler.register_plugin(info.name, endpoint, list(info.supported_versions))
        except Exception as err:  # same contract as validation
            self._actual.remove(path)
            message = f"{PREFIX}plugin registration failed with err: {err}"
            rpc_error = await self._notify(stub, path, False, message)
            found = diagnosis.registration_refused(path, message, str(err), endpoint)
            raise RegistrationFailed(_with_rpc_error(message, rpc_error), found) from err

    async def _notify_registered(
        self, stub: RegistrationStub, path: str, handler: PluginHandler, info: registration_pb2.PluginInfo
    ) -> None:
        """Tell the plugin it is registered; a plugin that does not take the news is deregistered again."""
        rpc_error = await self._notify(stub, path, True, "")
        if rpc_error is not None:
            self._actual.remove(path)
            await handler.deregister_plugin(info.name, _endpoint(info, path))
            message = f"{PREFIX}failed to send registration status at socket {path}, err: : {rpc_error}"
            raise RegistrationFailed(message, diagnosis.notify_failed(path, message, rpc_error))

    async def _notify(self, stub: RegistrationStub, path: str, registered: bool, error: str) -> str | None:
        """Send the status; the Go text of the call's gRPC error, or ``None`` when the driver accepted it."""
        status = registration_pb2.RegistrationStatus(plugin_registered=registered, error=error)
        try:
            await self._call(
                stub.NotifyRegistrationStatus, "NotifyRegistrationStatus", status, path, self._timeouts.notify
            )
        except grpc.aio.AioRpcError as err:
            return go_rpc_error(err)
        return None

    async def _call(
        self, rpc: Callable[..., Awaitable[_Response]], method: str, request: Message, path: str, timeout: float
    ) -> _Response:
        """One registration RPC with a request ID, recorded like every DRA call (the driver is not known yet)."""
        request_id = next_request_id()
        self._log.v(6).info("Calling", requestID=request_id, method=method, socket=path, request=message_json(request))
        started, clock = time.time(), time.monotonic()
        response: Message | None = None
        status, details = "OK", ""
        try:
            answer = response = await rpc(request, timeout=timeout)
            return answer
        except grpc.aio.AioRpcError as err:
            status, details = err.code().name, err.details() or ""
            raise
        finally:
            if self._recorder is not None:
                self._recorder.add(
                    CallRecord(
                        request_id=request_id,
                        driver="",
                        endpoint=path,
                        method=REGISTRATION.method_path(method),
                        streaming=False,
                        request=request,
                        response=response,
                        status=status,
                        details=details,
                        started_at=started,
                        duration=time.monotonic() - clock,
                    )
                )

    async def _reject(self, stub: RegistrationStub, path: str, message: str, found: Diagnosis) -> NoReturn:
        """Tell the plugin why it is rejected; fails the attempt behind the kubelet's misleading prefix."""
        rpc_error = await self._notify(stub, path, False, message)
        attempt_error = f"{PREFIX}failed to send error at socket {path}, err: {_with_rpc_error(message, rpc_error)}"
        raise RegistrationFailed(attempt_error, found)


def _endpoint(info: registration_pb2.PluginInfo, path: str) -> str:
    """Where the plugin's service is: its endpoint, else the registration socket itself (as the kubelet reads it)."""
    return info.endpoint or path

"""Recording a live node as a scenario file: ``kubelet-dra run --record FILE``.

While the node runs, ``Recorder`` watches what a replay needs to do it again: the drivers that
registered (their command lines, read from the registration socket's peer process, with paths
turned back into placeholders), the pods bound to the node with the objects they use, when each
pod was created, ran and was deleted, and the gRPC calls that succeeded. When the node stops it
writes a scenario whose steps repeat those events and whose expectations are what was seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import struct
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import attrs
import yaml

from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.peers.datafiles import check_replaceable, refusal, replace_file
from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.peers.kube.client import api_path
from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.scenarios.schema import API_VERSION, KIND
from kubelet_dra.workbench.testbed import objects

POLL_INTERVAL = 0.2
RECORDED_WITHIN = "30s"
PREPARE = "NodePrepareResources"
UNPREPARE = "NodeUnprepareResources"
PYTHON = re.compile(r"python[0-9.]*$")
KEPT_METADATA = ("name", "namespace", "labels", "annotations")
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


@attrs.define
class SeenDriver:
    """A registered driver: its name, negotiated service, and the command line template that starts it again."""

    name: str
    service: str
    command: str | None
    """``None`` when its process could not be found: it is recorded as an external driver."""


@attrs.define
class SeenPod:
    manifest: dict[str, Any]
    ran: bool = False
    deleted: bool = False


class Recorder:
    """``async with Recorder(node, path, kubeconfig=…):`` around a running node writes ``path`` at exit."""

    def __init__(self, node: Node, path: str | Path, *, kubeconfig: str, registry_dir: str) -> None:
        self.node = node
        self.path = Path(path)
        self.kubeconfig = str(Path(kubeconfig).absolute())
        self.registry_dir = str(Path(registry_dir).absolute())
        self.drivers: dict[str, SeenDriver] = {}
        self.pods: dict[str, SeenPod] = {}
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.events: list[tuple[str, str]] = []
        """(what, pod key) in the order they happened: created, running, deleted."""
        self._tasks: list[asyncio.Task[None]] = []
        self._log = get_logger("record", file=str(self.path))
        try:
            check_replaceable(self.path)  # nothing is written before the end: a recording is whole or absent
        except OSError as err:
            raise self._unwritable(err) from None

    async def __aenter__(self) -> Recorder:
        self._tasks = [
            asyncio.create_task(self._watch_drivers(), name="record drivers"),
            asyncio.create_task(self._watch_pods(), name="record pods"),
        ]
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._look_at_drivers()
        self._write(self.text().encode())
        self._log.info("Recorded scenario", drivers=len(self.drivers), pods=len(self.pods))

    def _write(self, data: bytes) -> None:
        """Replace the file atomically, then read it back: the whole recording is there, or the file that was."""
        try:
            replace_file(self.path, data)
            with open(os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as written:
                read = written.read()
        except OSError as err:
            raise self._unwritable(err) from None
        if read != data:
            raise ConfigError(
                "the scenario written does not read back as written", where=str(self.path), fix="check the disk"
            )

    def _unwritable(self, err: OSError) -> ConfigError:
        return ConfigError(
            f"cannot write the scenario: {refusal(err)}",
            where=str(self.path),
            fix="give --record a file of your own in a writable directory with free space",
        )

    # --- watching ---

    async def _watch_drivers(self) -> None:
        while True:
            self._look_at_drivers()
            await asyncio.sleep(POLL_INTERVAL)

    def _look_at_drivers(self) -> None:
        for state in self.node.registrations():
            if state.name and state.name not in self.drivers:
                instances = [i for i in self.node.instances(state.name) if i.connected]
                if instances:
                    plugin_dir = str(Path(instances[0].endpoint).parent)
                    command = self._command(state.socket_path, plugin_dir)
                    self.drivers[state.name] = SeenDriver(state.name, instances[0].chosen_service, command)

    async def _watch_pods(self) -> None:
        """List and watch the node's pods, so no phase is missed; list again after any watch failure."""
        kube = self.node.kube
        if kube is None:
            return
        selector = {"fieldSelector": f"spec.nodeName={self.node.name}"}
        path = api_path("", "v1", "pods")
        while True:
            try:
                listed = await kube.request("GET", path, query=selector)
                # list items carry no kind or apiVersion (the list names them), as from kube-apiserver
                current = {_key(pod): {"apiVersion": "v1", "kind": "Pod", **pod} for pod in listed.get("items") or []}
                for pod in current.values():
                    await self._pod_changed(pod)
                for key in [key for key in self.pods if key not in current]:
                    self._pod_gone(key)
                version = str(listed["metadata"].get("resourceVersion", ""))
                async with contextlib.aclosing(kube.watch(path, {**selector, "resourceVersion": version})) as events:
                    async for event in events:
                        if event.type == "BOOKMARK":
                            continue
                        if event.type == "DELETED":
                            self._pod_gone(_key(event.object))
                        else:
                            await self._pod_changed(event.object)
            except Exception as err:  # keep recording through an API server hiccup
                self._log.v(2).info("Watching pods failed; listing again", err=str(err))
                await asyncio.sleep(POLL_INTERVAL)

    async def _pod_changed(self, pod: dict[str, Any]) -> None:
        key = _key(pod)
        if key not in self.pods:
            self.pods[key] = SeenPod(_clean(pod))
            await self._remember_objects(pod)
            self.events.append(("created", key))
        seen = self.pods[key]
        if not seen.ran and (pod.get("status") or {}).get("phase") == "Running":
            seen.ran = True
            self.events.append(("running", key))
        if pod["metadata"].get("deletionTimestamp"):
            self._pod_gone(key)

    def _pod_gone(self, key: str) -> None:
        seen = self.pods.get(key)
        if seen is not None and not seen.deleted:
            seen.deleted = True
            self.events.append(("deleted", key))

    async def _remember_objects(self, pod: dict[str, Any]) -> None:
        """The claims and templates a pod uses and their device classes, as the user wrote them."""
        kube = self.node.kube
        assert kube is not None
        namespace = pod["metadata"].get("namespace", "default")
        for reference in pod["spec"].get("resourceClaims") or []:
            for kind, field in (
                ("ResourceClaim", "resourceClaimName"),
                ("ResourceClaimTemplate", "resourceClaimTemplateName"),
            ):
                if reference.get(field):
                    found = await objects.get(kube, kind, reference[field], namespace)
                    if found is None or POD_CLAIM_ANNOTATION in (found["metadata"].get("annotations") or {}):
                        continue
                    spec = found["spec"]["spec"] if kind == "ResourceClaimTemplate" else found["spec"]
                    for request in (spec.get("devices") or {}).get("requests") or []:
                        name = (request.get("exactly") or request).get("deviceClassName")
                        if name and ("DeviceClass", "", name) not in self.objects:
                            device_class = await objects.get(kube, "DeviceClass", name)
                            if device_class is not None:
                                self.objects[("DeviceClass", "", name)] = _clean(device_class)
                    self.objects[(kind, namespace, reference[field])] = _clean(found)

    def _command(self, socket_path: str, plugin_dir: str) -> str | None:
        """The driver's command line, from the process serving its registration socket, as a template."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.connect(socket_path)
                pid, _, _ = struct.unpack("3i", probe.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
            # as Python carries any argv: a byte that is not UTF-8 becomes a lone surrogate, which the YAML
            # escapes and os.fsencode turns back into the same byte
            argv = os.fsdecode(Path(f"/proc/{pid}/cmdline").read_bytes()).split("\0")[:-1]
        except OSError as err:
            self._log.info("Cannot find the driver's process; recording it as external", err=str(err))
            return None
        values = {
            self.kubeconfig: "{kubeconfig}",
            self.registry_dir: "{registry_dir}",
            plugin_dir: "{plugin_dir}",
            self.node.name: "{node}",
        }
        words = [_template(word, values) for word in argv]
        if words and PYTHON.search(os.path.basename(words[0])):
            words[0] = "{python}"
        for index, word in enumerate(words[:-1]):
            if word == "--cdi-root":
                words[index + 1] = "{cdi_root}"
        return " ".join(_quote(word) for word in words)

    # --- the scenario ---

    def document(self) -> dict[str, Any]:
        options = self.node.options
        ids = _driver_ids(list(self.drivers))
        drivers = []
        for name, seen in self.drivers.items():
            entry: dict[str, Any] = {"id": ids[name], "name": name}
            entry |= {"command": seen.command} if seen.command else {"external": True}
            drivers.append(entry)
        steps: list[dict[str, Any]] = (
            [
                {
                    "expect": [
                        {"registration": {"driver": ids[name], "service": seen.service}}
                        for name, seen in self.drivers.items()
                    ]
                }
            ]
            if self.drivers
            else []
        )
        for what, key in self.events:
            steps += _event_steps(what, key, self.pods[key])
        calls = [
            {"calls": {"driver": ids[name], "method": method, "status": "OK", "count": count}}
            for name in self.drivers
            for method in (PREPARE, UNPREPARE)
            if (count := sum(r.status == "OK" for r in self.node.recorder.records(driver=name, method=method)))
        ]
        if calls:
            steps.append({"expect": calls})
        node: dict[str, Any] = {"name": self.node.name}
        if options.kubelet_timing:
            node["kubeletTiming"] = True
        if options.legacy_services:
            node["legacyServices"] = True
        if any(seen.command is None for seen in self.drivers.values()):
            node["registryDir"] = self.registry_dir
        document: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {
                "name": f"recorded-{_slug(self.node.name)}",
                "description": f"Recorded by kubelet-dra run on node {self.node.name} at "
                + time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            },
            "node": node,
            "timing": {
                "wipingDelay": f"{options.wiping_delay:g}s",
                "callTimeout": f"{options.call_timeout:g}s",
                "podBackOffPeriod": f"{options.pod_sync.back_off_period:g}s",
                "syncFrequency": f"{options.pod_sync.sync_frequency:g}s",
                "reconcilePeriod": f"{options.reconcile_period:g}s",
                "within": RECORDED_WITHIN,
            },
            "drivers": drivers,
            "objects": list(self.objects.values()),
            "steps": steps or [{"sleep": "0s"}],
        }
        return document

    def text(self) -> str:
        header = "# Recorded by `kubelet-dra run --record`; replay with `kubelet-dra replay FILE`.\n"
        return header + yaml.safe_dump(self.document(), sort_keys=False, width=120)


def _event_steps(what: str, key: str, pod: SeenPod) -> list[dict[str, Any]]:
    namespace, _, name = key.partition("/")
    reference = {"pod": name} | ({"namespace": namespace} if namespace != "default" else {})
    if what == "created":
        return [{"apply": [pod.manifest]}]
    if what == "running":
        return [{"expect": {"pod": {**reference, "phase": "Running"}}}]
    return [{"deletePod": reference}, {"expect": {"pod": {**reference, "phase": "Gone"}}}]


def _key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata'].get('namespace', 'default')}/{pod['metadata']['name']}"


def _clean(manifest: dict[str, Any]) -> dict[str, Any]:
    """A manifest as a user would write it: no status, no server-set metadata."""
    metadata = {key: value for key, value in manifest["metadata"].items() if key in KEPT_METADATA and value}
    return {
        "apiVersion": manifest["apiVersion"],
        "kind": manifest["kind"],
        "metadata": metadata,
        "spec": manifest["spec"],
    }


def _template(word: str, values: dict[str, str]) -> str:
    """``word`` with a known value (whole, as a path prefix, or after ``--flag=``) replaced by its placeholder."""
    flag, equals, rest = word.partition("=")
    if equals and flag.startswith("-"):
        return f"{flag}={_template(rest, values)}"
    for value, placeholder in sorted(values.items(), key=lambda item: -len(item[0])):
        if word == value:
            return placeholder
        if value.startswith("/") and word.startswith(value + "/"):
            return placeholder + word[len(value) :]
    return word.replace("{", "{{").replace("}", "}}")


def _quote(word: str) -> str:
    return word if word and not re.search(r"[\s'\"\\$]", word) else "'" + word.replace("'", "'\\''") + "'"


def _driver_ids(names: list[str]) -> dict[str, str]:
    """Short unique ids from driver names: ``gpu.example.com`` → ``gpu``."""
    ids: dict[str, str] = {}
    for name in names:
        base = _slug(name.split(".")[0]) or "driver"
        candidate, number = base, 2
        while candidate in ids.values():
            candidate, number = f"{base}-{number}", number + 1
        ids[name] = candidate
    return ids


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")

"""A replay's trace in five normalized columns: calls, pod status, events, slices, checkpoint.

Each column is a list of lines in which what always differs between two runs (UIDs, generated
names, times, the number of health-stream retries) is replaced or folded, so two nodes that did
the same thing give the same lines. Calls reuse ``calls diff``'s normalization and pod statuses
the pod history's; events, slices and the checkpoint are normalized here.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from kubelet_dra.kubelet.cm.dra.state.checkpoint import ClaimInfoState, DeviceState
from kubelet_dra.workbench.fidelity.history import history, without_transient
from kubelet_dra.workbench.fidelity.watch import Sighting
from kubelet_dra.workbench.tap.diff import HEALTH_STREAM, by_driver, call_lines, kinds

COLUMNS = ("calls", "pod status", "events", "slices", "checkpoint")
CALLER_ENDED = ("CANCELLED", "DEADLINE_EXCEEDED")
"""Calls the caller ended: their details are the recorder's words (the tap's or kubelet-dra's), not the driver's."""
NOT_CONNECTED = "failed to connect to all addresses"
"""gRPC's words for a call that never left the caller (nothing served the endpoint): no driver saw it, and neither
does the tap on the real kubelet's side, so it is not a call made to the driver."""
HEALTH_TIME = "last_updated_time"
"""When the driver last checked a device (epoch seconds): the driver's clock, not the node's behaviour."""
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
RUNTIME_REASONS = frozenset({"Pulling", "Pulled", "Created", "Started", "Killing", "MissingClusterDNS"})
"""Pod Events of the real kubelet's container runtime side, which kubelet-dra (no containers) does not post."""
BEFORE_RESERVATION = (
    "ResourceClaim not created yet",
    "is not allowed to use ResourceClaim",
    "waiting for ResourceClaim",
)
"""A pod seen before its claims are generated and reserved: the replay creates pods bound to the node, so either
kubelet may sync one before the control plane has generated and reserved its claims, or not (and the control plane
may look at the pod before its claim controller made the claim); in a cluster the kubelet sees a pod only once it
is bound, after that."""
_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_FOLD = re.compile(r" \(x\d+\)$")
_DEVICE_NAME = re.compile(r'"device_name": "([^"]+)"')


@attrs.frozen
class Trace:
    """One node's replay of one scenario, column by column."""

    columns: Mapping[str, tuple[str, ...]]

    def to_json(self) -> dict[str, list[str]]:
        return {column: list(self.columns[column]) for column in COLUMNS}

    @classmethod
    def from_json(cls, data: Mapping[str, Sequence[str]]) -> Trace:
        return cls({column: tuple(data.get(column) or ()) for column in COLUMNS})


def claim_labels(claims: Iterable[Sighting]) -> dict[str, str]:
    """Each claim generated for a pod → ``<pod/claim>`` (its pod and its name in the pod's spec): the generated
    name's random suffix differs between runs."""
    labels: dict[str, str] = {}
    for sighting in claims:
        meta = (sighting.object or {}).get("metadata") or {}
        owners = [owner.get("name") for owner in meta.get("ownerReferences") or [] if owner.get("kind") == "Pod"]
        pod_claim = (meta.get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
        if owners and pod_claim:
            labels[str(meta["name"])] = f"<{owners[0]}/{pod_claim}>"
    return labels


def _text(value: str, labels: Mapping[str, str]) -> str:
    for name, label in labels.items():
        value = value.replace(name, label)
    return _UID.sub("<uid>", value)


def calls(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """``calls diff``'s lines driver by driver, each driver's registration calls, DRA calls and health streams apart
    (``kubelet_dra.workbench.tap.diff.kinds``), devices numbered as they first appear.

    Per driver, because the order in which a kubelet calls two drivers is its goroutines' chance; calls that overlap,
    or follow each other with the same method and status, are put in text order (a faster node's calls follow
    closer, and two pods' workers call a driver independently). The same call, or registration handshake, made again
    at once is one line (``_retries_folded``): how often a failed call is retried before a scenario mends it is the
    retry period's count (the real kubelet's 60–90 s, the file's shortened one), and a health stream is opened again
    every 5 s.
    The details of a call the caller ended (``CALLER_ENDED``) are left out, and so is a call that never reached a
    driver (``NOT_CONNECTED``). A health stream shows the reports it carried, each change once (``_reports``).
    Which device a claim gets is the allocator's choice."""
    lines: list[str] = []
    for driver, found in sorted(by_driver(records).items()):
        reached = [
            {**_reports(record), "details": "" if record["status"] in CALLER_ENDED else record.get("details")}
            for record in found
            if not (record["status"] == "UNAVAILABLE" and NOT_CONNECTED in (record.get("details") or ""))
        ]
        for group in kinds(reached):
            plain = _runs_sorted([_FOLD.sub("", line) for line in call_lines(group, concurrent=0)])
            lines += [f"{driver}: {line}" for line in _retries_folded(plain)]
    devices: dict[str, str] = {}
    for line in lines:
        for name in _DEVICE_NAME.findall(line):
            devices.setdefault(name, f"<device-{len(devices) + 1}>")
    return [_renamed(line, devices) for line in lines]


def _retries_folded(lines: list[str]) -> list[str]:
    """A call made again at once as one line, and so a failed registration handshake of two (GetInfo, then the
    refusing NotifyRegistrationStatus): the kubelet retries on its back-off, so how many attempts fall before the
    trace ends is timing. A handshake that succeeded twice is two registrations and stays."""
    folded: list[str] = []
    for line in lines:
        folded.append(line)
        if len(folded) >= 2 and folded[-2] == line:
            folded.pop()
        elif len(folded) >= 4 and folded[-4:-2] == folded[-2:] and any(map(_refused, folded[-2:])):
            del folded[-2:]
    return folded


def _refused(line: str) -> bool:
    """A call that failed, or the kubelet's word to a driver that it was not registered."""
    return line.split(" ", 2)[1] != "OK" or '"plugin_registered": false' in line


def _reports(record: dict[str, Any]) -> dict[str, Any]:
    """A health stream with its driver's times taken out and the same report sent again at once as one: a driver
    reports every interval for as long as the stream lives, so the count is how long each node took to reach the
    scenario's next step (a change of health stays a line of its own)."""
    if not record["method"].endswith(HEALTH_STREAM) or not isinstance(record.get("response"), list):
        return record
    reports = [_timeless(message) for message in record["response"]]
    return {
        **record,
        "response": [report for index, report in enumerate(reports) if reports[index - 1 : index] != [report]],
    }


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: "<time>" if key == HEALTH_TIME else _timeless(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_timeless(item) for item in value]
    return value


def _runs_sorted(lines: list[str]) -> list[str]:
    """Calls of one method with one outcome made one after another in text order: two pods' workers call a driver
    independently, so which of their calls comes first is chance (a failure before a success keeps its place)."""
    runs = [list(run) for _, run in itertools.groupby(lines, key=lambda line: tuple(line.split(" ", 2)[:2]))]
    return [line for run in runs for line in sorted(run)]


def _renamed(line: str, names: Mapping[str, str]) -> str:
    """Each name in ``line`` replaced in one pass (a placeholder may contain another name: ``<device-1>``)."""
    if not names:
        return line
    pattern = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    return re.sub(rf"(?<![\w<])(?:{pattern})(?![\w.])", lambda match: names[match.group()], line)


def pod_status(pods: Iterable[Sighting]) -> list[str]:
    """Each pod's status history (``kubelet_dra.workbench.fidelity.history``), pod by pod in name order, without the
    transient statuses (``kubelet_dra.workbench.fidelity.history.without_transient``)."""
    by_pod: dict[str, list[dict[str, Any] | None]] = {}
    for sighting in pods:
        by_pod.setdefault(sighting.key, []).append(sighting.object)
    return [f"{key}: {line}" for key in sorted(by_pod) for line in without_transient(history(by_pod[key]))]


def events(sightings: Iterable[Sighting], labels: Mapping[str, str]) -> list[str]:
    """The distinct pod Events in order of first posting (type, reason, object, message), without the runtime's
    (``RUNTIME_REASONS``) and those ``BEFORE_RESERVATION``: how often an Event repeats is a count of retries,
    which is timing."""
    lines: list[str] = []
    for sighting in sightings:
        event = sighting.object
        involved = (event or {}).get("involvedObject") or {}
        if event is None or involved.get("kind") != "Pod" or event.get("reason") in RUNTIME_REASONS:
            continue
        message = _text(str(event.get("message", "")), labels)
        if any(words in message for words in BEFORE_RESERVATION):
            continue
        line = f"{event.get('type')} {event.get('reason')} Pod {involved.get('name')}: {message}"
        if line not in lines:
            lines.append(line)
    return lines


def slices(sightings: Iterable[Sighting]) -> list[str]:
    """Each driver's ResourceSlice creations and deletions in order, slices numbered per driver as they appear."""
    numbers: dict[str, str] = {}
    drivers: dict[str, str] = {}
    by_driver: dict[str, list[str]] = {}
    for sighting in sightings:
        if sighting.object is not None and sighting.key not in drivers:
            spec = sighting.object.get("spec") or {}
            drivers[sighting.key] = driver = str(spec.get("driver"))
            numbers[sighting.key] = f"slice-{sum(1 for d in drivers.values() if d == driver)}"
            devices = len(spec.get("devices") or [])
            by_driver.setdefault(driver, []).append(f"{driver}: created {numbers[sighting.key]} ({devices} devices)")
        elif sighting.object is None and sighting.key in drivers:
            driver = drivers[sighting.key]
            by_driver[driver].append(f"{driver}: deleted {numbers[sighting.key]}")
    return [line for driver in sorted(by_driver) for line in by_driver[driver]]


def checkpoint(entries: Iterable[ClaimInfoState], labels: Mapping[str, str]) -> list[str]:
    """One line per prepared device of each checkpointed claim, claims in name order, without UIDs; devices are
    numbered in that order (the allocator's choice of device is not the node's)."""
    lines = []
    devices: dict[str, str] = {}
    for entry in sorted(entries, key=lambda entry: (entry.namespace, _text(entry.claim_name, labels))):
        claim = f"{entry.namespace}/{_text(entry.claim_name, labels)} pods={len(entry.pod_uids)}"
        for driver, prepared in sorted(entry.driver_state.items()):
            skipped = entry.skip_node_operations.get(driver)
            skips = f" skips={','.join(skipped)}" if skipped else ""
            for device in prepared:
                devices.setdefault(device.device_name, f"<device-{len(devices) + 1}>")
            lines += [f"{claim} {driver}: {_device(device, labels)}{skips}" for device in prepared] or [
                f"{claim} {driver}: no devices{skips}"
            ]
    return [_renamed(line, devices) for line in lines]


def _device(device: DeviceState, labels: Mapping[str, str]) -> str:
    requests, cdi = ",".join(device.request_names), _text(",".join(device.cdi_device_ids), labels)
    shared = " shared" if device.share_id else ""
    return f"{device.pool_name}/{device.device_name} requests={requests} cdi={cdi}{shared}"

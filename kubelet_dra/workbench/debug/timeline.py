"""What happened on the node, as a timeline: the difference between two snapshots of its state.

The node keeps only its current state (sockets and their phase, instances and their connection,
wipe timers, calls made). The debugger takes a snapshot after every change and turns what differs
from the previous one into events, so the core needs no event bus and the timeline cannot
disagree with the state shown next to it.
"""

from __future__ import annotations

import attrs

from kubelet_dra.kubelet.cm.dra.plugin import CallRecord
from kubelet_dra.kubelet.cm.dra.plugin.resourceslices import WipeOutcome
from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.kubelet.pluginmanager import SocketPhase, SocketState

TROUBLED = frozenset({"TRANSIENT_FAILURE", "SHUTDOWN"})


@attrs.frozen
class InstanceView:
    """One registered driver instance, as the debugger shows it."""

    driver: str
    endpoint: str
    service: str
    """The advertised identifier negotiated at registration (``v1.DRAPlugin``)."""
    connectivity: str
    """The gRPC channel state: ``IDLE``, ``CONNECTING``, ``READY``, ``TRANSIENT_FAILURE``, ``SHUTDOWN``."""
    connected: bool


@attrs.frozen
class Snapshot:
    at: float
    sockets: dict[str, SocketState]
    instances: dict[tuple[str, str], InstanceView]
    wipes: dict[str, float]
    """Driver → when its ResourceSlices will be wiped unless it becomes usable first."""
    wiped: tuple[WipeOutcome, ...]
    calls: tuple[CallRecord, ...]


@attrs.frozen
class Event:
    at: float
    subject: str
    """The socket path, ``driver endpoint`` or driver name the event is about."""
    text: str
    problem: bool = False
    repeats: int = 1
    """How often the same event happened in a row (a socket failing the same way at every retry)."""
    last_at: float | None = None
    """When the last repeat happened."""

    def to_json(self) -> dict[str, object]:
        return attrs.asdict(self)


class Timeline:
    """The latest events, oldest first; an event equal to the last one of its subject counts as a repeat."""

    def __init__(self, keep: int = 200) -> None:
        self._keep = keep
        self.events: list[Event] = []

    def add(self, events: list[Event]) -> list[Event]:
        """Add ``events``; the ones that are new lines (not repeats), for a streaming view."""
        fresh = []
        for event in events:
            last = next((e for e in reversed(self.events) if e.subject == event.subject), None)
            if last is not None and (last.text, last.problem) == (event.text, event.problem):
                index = len(self.events) - 1 - self.events[::-1].index(last)
                self.events[index] = attrs.evolve(last, repeats=last.repeats + 1, last_at=event.at)
                continue
            self.events.append(event)
            fresh.append(event)
        del self.events[: -self._keep]
        return fresh


def snapshot(node: Node, at: float) -> Snapshot:
    instances = {
        (i.driver_name, i.endpoint): InstanceView(
            i.driver_name, i.endpoint, i.chosen_service, i.connectivity.name, i.connected
        )
        for i in node.instances()
    }
    return Snapshot(
        at=at,
        sockets={state.socket_path: state for state in node.registrations()},
        instances=instances,
        wipes=node.pending_wipes(),
        wiped=tuple(node.wiper.outcomes) if node.wiper else (),
        calls=tuple(node.recorder.records()),
    )


def changes(before: Snapshot, after: Snapshot) -> list[Event]:
    """The events that lead from ``before`` to ``after``, in a stable order."""
    return [
        *_socket_events(before, after),
        *_instance_events(before, after),
        *_wipe_events(before, after),
        *(_call_event(record) for record in after.calls[len(before.calls) :]),
    ]


def _socket_events(before: Snapshot, after: Snapshot) -> list[Event]:
    events = []
    for path in sorted(before.sockets.keys() | after.sockets.keys()):
        old, new = before.sockets.get(path), after.sockets.get(path)
        if new is None:
            events.append(Event(after.at, path, "registration socket gone; the node unregistered it"))
        elif old is not None and old.phase is SocketPhase.BACKOFF and new.phase is SocketPhase.IN_PROGRESS:
            continue  # a retry: its outcome is the event (a failure like the last one counts as a repeat)
        elif old is None:
            # Two lines, so a failure already seen in this snapshot folds with its later repeats.
            events += [Event(after.at, path, "registration socket found"), _phase_event(after.at, new)]
        elif (old.phase, old.diagnosis, old.retry_at) != (new.phase, new.diagnosis, new.retry_at):
            events.append(_phase_event(after.at, new))
    return events


def _phase_event(at: float, state: SocketState) -> Event:
    path = state.socket_path
    if state.phase is SocketPhase.REGISTERED:
        return Event(at, path, f"registered DRA driver {state.name} with endpoint {state.endpoint}")
    if state.phase is SocketPhase.IN_PROGRESS:
        return Event(at, path, "handshake running: dial, GetInfo, validation, NotifyRegistrationStatus")
    if state.phase is SocketPhase.UNREGISTERING:
        return Event(at, path, "socket removed or re-created: unregistering the old incarnation")
    if state.diagnosis is not None:
        return Event(at, path, f"{state.diagnosis.id} {state.diagnosis.symptom}: {state.diagnosis.cause}", True)
    if state.phase is SocketPhase.BACKOFF:
        return Event(at, path, f"registration attempt failed: {state.last_error}", True)
    return Event(at, path, "waiting for the next registration attempt")


def _instance_events(before: Snapshot, after: Snapshot) -> list[Event]:
    events = []
    for key in sorted(before.instances.keys() | after.instances.keys()):
        old, new = before.instances.get(key), after.instances.get(key)
        subject = f"{key[0]} {key[1]}"
        if new is None:
            events.append(Event(after.at, subject, "instance removed: its connection is closed"))
        elif old is None:
            events.append(Event(after.at, subject, f"instance created, service {new.service}: {new.connectivity}"))
        elif old.connectivity != new.connectivity:
            text = f"connection {old.connectivity} → {new.connectivity}"
            events.append(Event(after.at, subject, text, new.connectivity in TROUBLED))
    return events


def _wipe_events(before: Snapshot, after: Snapshot) -> list[Event]:
    events = []
    for driver in sorted(after.wipes.keys() - before.wipes.keys()):
        delay = max(0.0, after.wipes[driver] - after.at)
        # Not a problem yet: the kubelet arms this timer at every registration, before the connection is up.
        text = f"no connected instance: its ResourceSlices are wiped in {delay:.0f} s unless one connects"
        events.append(Event(after.at, driver, text))
    wiped = after.wiped[len(before.wiped) :]
    fired = {outcome.driver for outcome in wiped}
    for driver in sorted(before.wipes.keys() - after.wipes.keys() - fired):
        events.append(Event(after.at, driver, "wipe cancelled: a connected instance is back"))
    for outcome in wiped:
        subject = outcome.driver or "node"
        if not outcome.done:
            text = f"gave up deleting ResourceSlices ({outcome.field_selector}) after {outcome.attempts} attempt(s)"
        elif outcome.dry_run:
            text = f"would delete {outcome.deleted} ResourceSlice(s) ({outcome.field_selector}); dry run"
        else:
            text = f"deleted {outcome.deleted} ResourceSlice(s) ({outcome.field_selector})"
        events.append(Event(after.at, subject, text, bool(outcome.driver)))
    return events


def _call_event(record: CallRecord) -> Event:
    method = record.method.rsplit("/", 1)[-1]
    subject = f"{record.driver} {record.endpoint}"
    at = record.started_at + record.duration
    if record.streaming and record.status == "UNIMPLEMENTED":
        # The kubelet reopens the health stream every 5 s; one line for all of them (see Event.repeats).
        return Event(at, subject, f"{method}: health service not served (F13, harmless; the kubelet retries)")
    status = record.status + (f": {record.details}" if record.details else "")
    text = f"request {record.request_id} {method} → {status} ({record.duration * 1000:.0f} ms)"
    return Event(at, subject, text, record.status != "OK")

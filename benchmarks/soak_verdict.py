"""The crash soak's judge: the driver's own records of every call, and the invariants they must satisfy.

The reference driver run at ``-v 6`` logs every request it handles and every answer it sends (one
line each, with the request ID); that log is the record of what reached the driver, kept even when
the driver or the node was killed -9 in the middle of a call. "Exactly once", as docs/protocol.md#dra-manager
allows it:

- A claim's ``NodePrepareResources`` is repeated only when a crash forced it: a repeat counts as a
  **double prepare** when the driver had already answered the claim OK and no outage of the node or
  the driver lies between (an outage lasts from the kill until the process is started again: a
  killed node's last request may reach the driver after the kill), when its pod had already been
  seen Running (a restarted kubelet does not prepare running pods again), or when the claim had
  already been unprepared.
- The same for ``NodeUnprepareResources``: a repeat after an OK answer needs an outage between (a
  kubelet killed before its checkpoint write unprepares again), else it is a **double unprepare**;
  except for a pod deleted with grace period 0: gone from the API, it is no longer an active pod, so
  the kubelet's reconcile loop may unprepare its claims while its pod worker does (§5.6, §5.7). A
  pod deleted gracefully stays active until its worker has finished terminating it, as in the
  kubelet's ``filterOutInactivePods``: only that worker unprepares it.
- A **lost claim** is a claim of a pod that was never deleted which, at the end, is not prepared:
  the pod not Running, the claim missing from the driver's prepared claims, from the CDI specs or
  from the kubelet's checkpoint, or unprepared by the driver at any time.
- Every claim of a deleted pod that the driver prepared was unprepared after its last prepare,
  and nothing of it is left: no prepared claim in the driver (**leaked claims**), no CDI spec
  (**leaked CDI specs**), no checkpoint entry.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Iterable, Sequence

import attrs
from google.protobuf import text_format

from kubelet_dra.peers.api import dra_v1_pb2

PREPARE = "NodePrepareResources"
UNPREPARE = "NodeUnprepareResources"
MESSAGES = {
    PREPARE: (dra_v1_pb2.NodePrepareResourcesRequest, dra_v1_pb2.NodePrepareResourcesResponse),
    UNPREPARE: (dra_v1_pb2.NodeUnprepareResourcesRequest, dra_v1_pb2.NodeUnprepareResourcesResponse),
}
START_MARK = re.compile(r"^--- start (\d+):")
"""The line the testbed writes into a driver's log before each start (request IDs restart with the process)."""
PAIR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')
ESCAPE = re.compile(r"\\(.)")
UNESCAPED = {"n": "\n", "t": "\t"}
TRACEBACK = "Traceback (most recent call last)"


@attrs.frozen
class Call:
    """One prepare or unprepare the driver handled: when it arrived, its claims, and those it answered OK."""

    method: str
    at: float
    claims: tuple[tuple[str, str], ...]
    """(claim UID, claim name) in the order of the request."""
    ok: frozenset[str] = frozenset()
    """UIDs of the claims answered without error; empty when the call failed or the driver died first."""


def _fields(line: str) -> dict[str, str]:
    """A logfmt line's key=value pairs, quoted values unescaped."""
    fields = {}
    for key, raw in PAIR.findall(line):
        if raw.startswith('"'):
            raw = ESCAPE.sub(lambda match: UNESCAPED.get(match[1], match[1]), raw[1:-1])
        fields[key] = raw
    return fields


def _timestamp(text: str) -> float:
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.UTC).timestamp()


def driver_calls(log: str) -> list[Call]:
    """Every prepare and unprepare in a reference driver's ``-v 6`` log, across its restarts, in arrival order.

    A line cut short by a kill does not parse and is skipped: its call then has no answer, as it had none.
    """
    calls: dict[tuple[int, str], Call] = {}
    start = 0
    for line in log.splitlines():
        if mark := START_MARK.match(line):
            start = int(mark[1])
            continue
        fields = _fields(line)
        method = fields.get("method", "").rpartition("/")[2]
        if method not in MESSAGES:
            continue
        key = (start, fields.get("requestID", ""))
        request_class, response_class = MESSAGES[method]
        try:
            if fields.get("msg") == "handling request":
                request = text_format.Parse(fields["request"], request_class())
                claims = tuple((claim.uid, claim.name) for claim in request.claims)
                calls[key] = Call(method, _timestamp(fields["ts"]), claims)
            elif fields.get("msg") == "handling request succeeded" and key in calls:
                response = text_format.Parse(fields["response"], response_class())
                ok = frozenset(uid for uid, result in response.claims.items() if not result.error)
                calls[key] = attrs.evolve(calls[key], ok=ok)
        except (KeyError, ValueError, text_format.ParseError):
            continue
    return sorted(calls.values(), key=lambda call: call.at)


def tracebacks(logs: Iterable[str]) -> int:
    return sum(log.count(TRACEBACK) for log in logs)


@attrs.define
class PodRecord:
    """One pod of the churn, as the soak made and saw it."""

    name: str
    uid: str
    created: float
    deleted: float | None = None
    deleted_while_node_down: bool = False
    forced: bool = False
    """Deleted with grace period 0: gone at once, so only the kubelet's reconcile loop can unprepare it."""
    claimed: bool = False
    """Its claim was generated (recorded in the pod's status)."""
    running_seen: float | None = None


@attrs.frozen
class FinalState:
    """What is left once the churn stopped and the node settled."""

    live_claims: dict[str, str]
    """Claim UID → pod name, for the pods the soak never deleted."""
    running: frozenset[str]
    """Names of the pods the API server shows Running."""
    pods_left: frozenset[str]
    """Names of deleted pods the API server still has."""
    driver_prepared: frozenset[str]
    cdi_specs: frozenset[str]
    """Claim UIDs with a CDI spec file."""
    checkpoint_valid: bool
    checkpoint: dict[str, frozenset[str]]
    """The kubelet's checkpoint: claim UID → pod UIDs."""
    tracebacks: int


@attrs.frozen
class Verdict:
    prepare_calls: int
    unprepare_calls: int
    claims_prepared: int
    claims_unprepared: int
    repeated_prepares: int
    """Repeats a kill forced (allowed)."""
    repeated_unprepares: int
    double_prepares: int
    double_unprepares: int
    lost_claims: int
    not_unprepared: int
    """Claims of deleted pods the driver prepared but never unprepared afterwards."""
    leaked_claims: int
    leaked_cdi_specs: int
    deleted_pods_left: int
    checkpoint_valid: bool
    stale_checkpoint_entries: int
    tracebacks: int

    @property
    def held(self) -> bool:
        broken = (
            self.double_prepares,
            self.double_unprepares,
            self.lost_claims,
            self.not_unprepared,
            self.leaked_claims,
            self.leaked_cdi_specs,
            self.deleted_pods_left,
            self.stale_checkpoint_entries,
            self.tracebacks,
        )
        return self.checkpoint_valid and not any(broken)


def _pod_name(claim_name: str) -> str:
    """The pod a generated claim belongs to: ``<pod>-<pod claim name>-<5 random characters>``."""
    return claim_name.rsplit("-", 2)[0]


@attrs.frozen
class Outage:
    """A process killed -9 and started again: what was sent before ``started`` may have had no answer."""

    killed: float
    started: float


def _outage_between(outages: Sequence[Outage], earlier: float, later: float) -> bool:
    """Whether a crash separates two calls that arrived at the driver at ``earlier`` and ``later``.

    A killed node's last request may reach the driver after the kill, so the earlier call counts as
    before the outage as long as it arrived before the process was started again.
    """
    return any(earlier < outage.started and outage.killed < later for outage in outages)


def _repeats(
    calls: Sequence[Call],
    uid: str,
    outages: Sequence[Outage],
    *,
    last_allowed: float = math.inf,
    racing: bool = False,
) -> tuple[int, int]:
    """(repeats, doubles) among one claim's calls of one method, in arrival order: a call after ``last_allowed``
    is a double, and so is a repeat of a call answered OK without a kill in between, unless two callers may
    be ``racing`` for the claim."""
    repeats = doubles = 0
    for index, call in enumerate(calls):
        earlier = calls[index - 1] if index else None
        if call.at > last_allowed or (
            earlier is not None
            and uid in earlier.ok
            and not racing
            and not _outage_between(outages, earlier.at, call.at)
        ):
            doubles += 1
        elif earlier is not None:
            repeats += 1
    return repeats, doubles


def judge(calls: Sequence[Call], outages: Sequence[Outage], pods: dict[str, PodRecord], final: FinalState) -> Verdict:
    """Hold the driver's records and the final state against the invariants of the module docstring."""
    by_claim: dict[str, dict[str, list[Call]]] = {}
    names: dict[str, str] = {}
    for call in calls:
        for uid, name in call.claims:
            by_claim.setdefault(uid, {PREPARE: [], UNPREPARE: []})[call.method].append(call)
            names[uid] = name
    counts = {"repeated": [0, 0], "double": [0, 0], "lost": 0, "not_unprepared": 0}
    for uid, methods in by_claim.items():
        prepares, unprepares = methods[PREPARE], methods[UNPREPARE]
        pod = pods.get(_pod_name(names[uid]))
        unprepared = min((call.at for call in unprepares if uid in call.ok), default=math.inf)
        running = pod.running_seen if pod is not None and pod.running_seen is not None else math.inf
        checks = (
            _repeats(prepares, uid, outages, last_allowed=min(unprepared, running)),
            _repeats(unprepares, uid, outages, racing=pod is not None and pod.forced),
        )
        for index, (repeats, doubles) in enumerate(checks):
            counts["repeated"][index] += repeats
            counts["double"][index] += doubles
        if pod is None or pod.deleted is None:
            counts["lost"] += bool(unprepares)  # a live pod's claim must never be unprepared
            continue
        last_prepared = max((call.at for call in prepares if uid in call.ok), default=None)
        if last_prepared is not None and not any(uid in call.ok and call.at > last_prepared for call in unprepares):
            counts["not_unprepared"] += 1
    for uid, pod_name in final.live_claims.items():
        pod = pods[pod_name]
        prepared = (
            pod_name in final.running
            and uid in final.driver_prepared
            and uid in final.cdi_specs
            and pod.uid in final.checkpoint.get(uid, ())
        )
        if not prepared and not by_claim.get(uid, {}).get(UNPREPARE):  # an unprepared one is counted above
            counts["lost"] += 1
    live = set(final.live_claims)
    return Verdict(
        prepare_calls=sum(call.method == PREPARE for call in calls),
        unprepare_calls=sum(call.method == UNPREPARE for call in calls),
        claims_prepared=sum(any(uid in call.ok for call in methods[PREPARE]) for uid, methods in by_claim.items()),
        claims_unprepared=sum(any(uid in call.ok for call in methods[UNPREPARE]) for uid, methods in by_claim.items()),
        repeated_prepares=counts["repeated"][0],
        repeated_unprepares=counts["repeated"][1],
        double_prepares=counts["double"][0],
        double_unprepares=counts["double"][1],
        lost_claims=counts["lost"],
        not_unprepared=counts["not_unprepared"],
        leaked_claims=len(final.driver_prepared - live),
        leaked_cdi_specs=len(final.cdi_specs - live),
        deleted_pods_left=len(final.pods_left),
        checkpoint_valid=final.checkpoint_valid,
        stale_checkpoint_entries=sum(
            uid not in live or pods_of != {pods[final.live_claims[uid]].uid}
            for uid, pods_of in final.checkpoint.items()
        ),
        tracebacks=final.tracebacks,
    )

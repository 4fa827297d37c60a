"""Deleting a node's ResourceSlices the way the kubelet does (docs/protocol.md#resourceslice-wiping).

At start the kubelet deletes every slice of its node (``spec.nodeName=<node>``); when a driver
has been unusable for the wiping delay it deletes that driver's slices (adding
``spec.driver=<driver>``). Slices without a node name are never touched. Each wipe first reads
the Node object (a missing Node is retried silently), then sends one ``deletecollection`` on
``resource.k8s.io/v1``; failures are retried with the apimachinery backoff until it runs out.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable

import attrs
from tenacity import AsyncRetrying, RetryError, retry_if_exception_type

from kubelet_dra.kubelet.wait import Backoff
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.peers.log import Logger, get_logger

GROUP = "resource.k8s.io"
VERSION = "v1"


class _Retry(Exception):
    """This attempt did not finish the wipe; the backoff decides whether another one follows."""


class _Exhausted(Exception):
    """The backoff has no steps left."""


@attrs.frozen
class WipeOutcome:
    driver: str
    """Empty for the node-wide wipe at start."""
    field_selector: str
    attempts: int
    done: bool
    deleted: int
    """How many slices the successful attempt deleted (would have deleted, in a dry run)."""
    dry_run: bool = False


def field_selector(node_name: str, driver: str = "") -> str:
    """The selector as Go's ``fields.Set`` renders it: ``key=value`` pairs sorted by key."""
    fields = {"spec.nodeName": node_name, **({"spec.driver": driver} if driver else {})}
    return ",".join(f"{key}={value}" for key, value in sorted(fields.items()))


class ResourceSliceWiper:
    def __init__(
        self,
        kube: KubeClient,
        node_name: str,
        *,
        sleep: Callable[[float], Awaitable[None]],
        rng: random.Random | None = None,
        log: Logger | None = None,
        dry_run: bool = False,
    ) -> None:
        self._kube = kube
        self.node_name = node_name
        self.dry_run = dry_run
        """Only count the slices a wipe would delete: the slices belong to a real kubelet's node."""
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._log = log or get_logger("slices", node=node_name)
        self.outcomes: list[WipeOutcome] = []

    async def wipe(self, driver: str = "") -> WipeOutcome:
        """Delete the node's slices (one driver's, with ``driver``); retried, cancellable, never fails."""
        backoff = Backoff(rng=self._rng)
        log = self._log.with_values(driverName=driver) if driver else self._log
        attempts = 0

        async def attempt() -> tuple[str, int]:
            nonlocal attempts
            if backoff.steps < 1:  # the last wait used up the backoff: give up without another attempt
                raise _Exhausted
            attempts += 1
            return await self._attempt(log, driver)

        retrying = AsyncRetrying(
            sleep=self._sleep,
            wait=lambda _: backoff.step(),
            stop=lambda _: backoff.steps == 1,
            retry=retry_if_exception_type(_Retry),
        )
        try:
            wiped: tuple[str, int] = await retrying(attempt)  # tenacity cannot say what the call returns
        except (RetryError, _Exhausted):
            log.error("Giving up deleting ResourceSlices", attempts=attempts)
            outcome = WipeOutcome(driver, field_selector(self.node_name, driver), attempts, False, 0, self.dry_run)
        else:
            outcome = WipeOutcome(driver, wiped[0], attempts, True, wiped[1], self.dry_run)
        self.outcomes.append(outcome)
        return outcome

    async def _attempt(self, log: Logger, driver: str) -> tuple[str, int]:
        try:
            node = await self._kube.request("GET", api_path("", "v1", "nodes", name=self.node_name))
        except KubeApiError as err:
            if not err.not_found:
                log.error("Unexpected error checking for node", err)
            raise _Retry from err
        selector = field_selector(node["metadata"]["name"], driver)
        try:
            answer = await self._kube.request(
                "GET" if self.dry_run else "DELETE",
                api_path(GROUP, VERSION, "resourceslices"),
                query={"fieldSelector": selector},
            )
        except KubeApiError as err:
            if err.not_found:
                log.v(5).info("ResourceSlices not found, nothing to delete.", fieldSelector=selector)
                return selector, 0
            # Unauthorized happens while credentials are not ready yet; the kubelet logs it less loudly.
            log.v(5 if err.code == 401 else 3).info(
                "Deleting ResourceSlice failed, retrying", fieldSelector=selector, err=str(err)
            )
            raise _Retry from err
        deleted = len(answer.get("items") or [])
        if self.dry_run:
            log.info("Would delete ResourceSlices (dry run)", fieldSelector=selector, count=deleted)
        else:
            log.info("Deleted ResourceSlices", fieldSelector=selector, deleted=deleted)
        return selector, deleted

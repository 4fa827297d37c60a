"""The restart steps several checks share: wait until the node can call the driver (again), put the node and
the driver back after a disruptive check, and the one kubelet restart of a run that LIF-007, SLC-006 and
SLC-007 all judge.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import Any

import attrs

from kubelet_dra.kubelet.cm.dra.plugin import PluginInstance
from kubelet_dra.kubelet.pluginmanager.plugin_manager import SocketPhase
from kubelet_dra.peers.errors import StateError
from kubelet_dra.workbench.conformance.checkcontext import CheckContext, pool_devices

REGISTER_WITHIN = 10.0
"""How long a (re)started driver may take until the node can call it again."""


async def usable(
    ctx: CheckContext, timeout: float = REGISTER_WITHIN, *, replacing: Sequence[PluginInstance] = ()
) -> str:
    """Wait until the node can call the driver (again: through a new instance, with ``replacing``); why
    not, if it cannot (at once when the driver's process exited)."""
    driver = ctx.driver

    def settled() -> bool:
        return ctx.bed.usable(ctx.driver_name, replacing=replacing) or (driver is not None and not driver.running)

    with contextlib.suppress(StateError):  # judged below, with the reason
        await ctx.bed.until(settled, timeout=timeout, what="registered")
    if ctx.bed.usable(ctx.driver_name, replacing=replacing):
        return ""
    exited = driver is not None and not driver.running
    state = f"its process exited with code {driver.returncode}" if exited and driver else f"{timeout:g} s passed"
    log = driver.log_tail(5).replace("\n", " | ") if driver is not None else ""
    return f"{state}; driver log: {log}"


def restore(ctx: CheckContext) -> None:
    """After the check, whatever happened: the node and the driver run, and the node can call the driver."""

    async def running_again() -> None:
        if not ctx.bed.node_running:
            await ctx.bed.start_node()
        if ctx.driver is not None:
            await ctx.driver.start()
        if problem := await usable(ctx):
            raise StateError(f"could not restore {ctx.driver_name}: {problem}")

    ctx.defer(running_again)


@attrs.frozen
class KubeletRestart:
    """What one kubelet restart did to the driver: its slices before the start-up wipe, the slices it
    published after it, and whether it registered again."""

    before: frozenset[tuple[str, str]]
    """(pool, device) the driver's slices for the node listed before the restart."""
    after: frozenset[tuple[str, str]]
    """(pool, device) its slices created since the wipe list (once they cover ``before``, or at the limit)."""
    new_slices: int
    republished_after: float | None
    """Seconds from the wipe until new slices listed every device listed before; ``None``: not while watched."""
    within: float
    """The limit (``--republish-within``)."""
    watched: float
    """How long the republish was waited for: past the limit too, to tell a late driver from one that never does."""
    registration: str
    """Why the restarted node could not call the driver again; empty when it could."""

    def expect_republished(self, ctx: CheckContext) -> None:
        if self.republished_after is None:
            ctx.fail(
                f"never republished: no slice listing the wiped devices in {self.watched:.0f} s of watching"
                f" ({self.new_slices} new slice(s); the limit is {self.within:g} s). The kubelet wipes a node's"
                " slices at every start (F14); the 0.36 kubeletplugin helper does not always recreate externally"
                " deleted slices (fixed in 1.37)"
            )
        ctx.expect(
            self.republished_after <= self.within,
            f"late: the wiped slices were published again after {self.republished_after:.1f} s, past the limit"
            f" of {self.within:g} s (--republish-within; the kubeletplugin helper takes up to a minute from the"
            " slices' creation)",
        )


async def kubelet_restart(ctx: CheckContext) -> KubeletRestart:
    """Restart the kubelet (its start-up wipe deletes the node's slices) and watch the driver register again
    and republish. Once per run: LIF-007, SLC-006 and SLC-007 judge the same restart, so a driver that takes
    its time to republish costs the run that time once."""
    return await ctx.observe("kubelet restart", lambda: _restart_kubelet(ctx))


async def _restart_kubelet(ctx: CheckContext) -> KubeletRestart:
    before = await ctx.slices()
    old = {item["metadata"]["uid"] for item in before}
    devices = pool_devices(before)
    watch = ctx.options.republish_watch

    async def new_slices() -> list[dict[str, Any]]:
        return [item for item in await ctx.slices() if item["metadata"]["uid"] not in old]

    async def republished() -> bool:
        current = await new_slices()
        return bool(current) and pool_devices(current) >= devices

    restore(ctx)
    seconds: float | None = None
    with ctx.waiting(REGISTER_WITHIN + watch):  # the registration and the republish, past --check-timeout
        node = await ctx.bed.restart_node()  # returns after its start-up wipe
        wiped = time.monotonic()
        registration = await usable(ctx)
        if not registration and not any(
            state.phase == SocketPhase.REGISTERED for state in node.registrations() if state.name == ctx.driver_name
        ):
            registration = f"no completed registration: {node.registrations()}"
        with contextlib.suppress(StateError):  # judged by the checks
            await ctx.bed.until(republished, timeout=max(0.0, watch - (time.monotonic() - wiped)), what="slices")
            seconds = time.monotonic() - wiped
    current = await new_slices()
    watched = time.monotonic() - wiped
    within = ctx.options.republish_within
    return KubeletRestart(devices, pool_devices(current), len(current), seconds, within, watched, registration)

"""Wire faults: the reference driver's fault knobs, carried out by the tap for whichever driver is behind it.

A knob is a *wire knob* when what the kubelet sees of it crosses the driver's sockets: an error instead of an
answer, an answer changed, a call held, a socket left behind. The tap gives those the names, values (one parser:
``Knob.parse``) and meaning they have in the reference driver, so a scenario's ``fault`` step works for any
driver. The other knobs act inside the reference driver (its policies on claims, the files and slices it writes)
and are refused with the reason; so is a value the tap cannot give a driver (``unsupported``). How each knob acts
on a call is ``kubelet_dra.workbench.tap.wirecalls``.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubelet_dra.peers.driver.knobs import BY_NAME, KNOBS, Faults, Knob, lookup, written
from kubelet_dra.peers.driver.versions import SERVED
from kubelet_dra.peers.errors import UsageError

_POLICY = "a policy of the reference driver on the claims it prepares: nothing on the wire says which claims another"
_POLICY += " driver would refuse"
NOT_ON_THE_WIRE: dict[str, str] = {
    "health-advertise": "the health services are the reference driver's own (--health): a proxy cannot give another"
    " driver health reports it does not make",
    "require-all-devices": _POLICY,
    "require-count": _POLICY,
    "require-config": _POLICY,
    "cdi-skip-write": "it acts on the CDI spec files the driver writes, which never cross its sockets",
    "no-republish": "it acts on the ResourceSlices the driver publishes to the API server, not on its sockets",
    "slices-node": "it acts on the ResourceSlices the driver publishes to the API server, not on its sockets",
}
"""The knobs the tap does not carry out, and why."""

WIRE_KNOBS: tuple[Knob, ...] = tuple(knob for knob in KNOBS if knob.name not in NOT_ON_THE_WIRE)
"""The knobs the tap carries out for any driver."""

DriverInfo = Mapping[str, Any]
"""What a driver's GetInfo answered, as JSON with the ``.proto`` field names (a call record's ``response``)."""


def unsupported(knob: str, value: Any, driver_info: DriverInfo | None = None) -> str | None:
    """Why the tap cannot carry out ``knob`` = ``value`` for the driver whose GetInfo answered ``driver_info`` (None:
    not known yet, only what no driver allows is said), or None when it can. ``UsageError``: no such knob or value."""
    name = lookup(knob).name
    if name in NOT_ON_THE_WIRE:
        return f"{name} is not a wire knob: {NOT_ON_THE_WIRE[name]}"
    parsed = BY_NAME[name].parse(written(value))
    if name != "versions" or parsed == "none":
        return None
    services = SERVED[parsed]
    if any(service.legacy for service in services):
        return (
            f"versions={parsed} needs a driver that serves the legacy {services[0].advertised} itself: no proxy"
            " translates v1 or v1beta1 to it"
        )
    if driver_info is None:
        return None
    advertised = [str(version) for version in driver_info.get("supported_versions") or ()]
    missing = [service.advertised for service in services if service.advertised not in advertised]
    if not missing:
        return None
    driver = driver_info.get("name") or "the driver"
    return f"versions={parsed} needs a driver that serves {' and '.join(missing)}; {driver} advertises " + (
        ", ".join(advertised) or "nothing"
    )


class WireFaults:
    """The wire knobs set on one tap, for every driver behind it, and the calls they hold now.

    Read and changed on the tap's event loop only (``TapThread.run`` from another thread): a held call waits on
    an event of that loop. ``stop_driver`` stops the driver's process (``exit-after-registration``); a tap that
    does not run its driver has none and refuses that knob.
    """

    def __init__(self, values: Mapping[str, Any] | None = None, *, stop_driver: Callable[[], None] | None = None):
        self._knobs = Faults()
        self.stop_driver = stop_driver
        self.driver_info: dict[str, Any] | None = None
        """What the driver's last GetInfo answered, before any knob changed it."""
        self.blocked: collections.Counter[str] = collections.Counter()
        """The calls a block knob holds now, by method name, as the reference driver reports them."""
        self.set(values or {})

    def get(self, name: str) -> Any:
        return self._knobs.get(name)

    def is_set(self, name: str) -> bool:
        return name in self._knobs.active()

    def active(self) -> dict[str, Any]:
        """The knobs that are set, by name (as the reference driver's control socket answers them)."""
        return self._knobs.active()

    def set(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Set knobs from their written form; a knob the tap cannot carry out is a ``UsageError`` and sets none."""
        for name, value in values.items():
            self._check(name, value)
        self._knobs.set(dict(values))
        return self.active()

    def clear(self, names: Iterable[str] = ()) -> dict[str, Any]:
        """Clear the named knobs, or all of them; held calls go on."""
        self._knobs.clear(names)
        return self.active()

    def reset(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Exactly ``values`` set, as a driver started with those flags has them."""
        for name, value in values.items():
            self._check(name, value)
        self._knobs.clear()
        return self.set(values)

    async def wait_until_off(self, name: str) -> None:
        await self._knobs.wait_until_off(name)

    def _check(self, name: str, value: Any) -> None:
        reason = unsupported(name, value, self.driver_info)
        knob = lookup(name)
        stops = knob.name == "exit-after-registration" and knob.parse(written(value))
        if reason is None and stops and self.stop_driver is None:
            reason = "exit-after-registration needs a tap that runs the driver: this one cannot stop it"
        if reason is not None:
            raise UsageError(
                f"the tap cannot carry out fault knob {knob.name}: {reason}",
                fix="leave the knob out for this driver, or give the reference driver its own --fault-" + knob.name,
            )

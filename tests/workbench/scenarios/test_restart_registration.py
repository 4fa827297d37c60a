"""A restarted driver is "registered again" only once the node registered the new process, as on the real kubelet.

The restarted driver's sockets have the same paths as the old process's. On the kubelet's one-second reconcile loop
the node unregisters the old registration only at its next pass, and until then the connection it keeps to the
endpoint path reaches the new process. A registration expectation met by that old registration let the next step
create a pod the node then could not prepare ("DRA driver … is not registered"): on the real kubelet's pod sync
periods the pod waited a minute for its resync, where the real kubelet, counted from the restart on, prepared it at
once.
"""

from __future__ import annotations

import pytest
import yaml

from kubelet_dra.workbench.scenarios.loader import loads
from kubelet_dra.workbench.scenarios.replayer import ReplayOptions, replay
from kubelet_dra.workbench.scenarios.replayreport import failures

from .library import LIBRARY


@pytest.mark.parametrize("name", ["register-after-plugin-restart", "service-reconnect"])
async def test_a_pod_created_once_the_restarted_driver_is_registered_again_is_prepared_at_once(name: str) -> None:
    document = yaml.safe_load((LIBRARY / f"{name}.yaml").read_text())
    document["node"] = {**document.get("node", {}), "kubeletTiming": True}
    document["timing"]["syncFrequency"] = "60s"  # a failed first prepare is retried only a minute later
    result = await replay(loads(yaml.safe_dump(document), f"{name}.yaml"), ReplayOptions())
    assert result.passed, failures(result)

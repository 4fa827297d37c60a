"""Every file of the scenario library replays green against the reference driver under kubelet 1.37."""

from __future__ import annotations

import pytest

from .library import FILES, replays_green


@pytest.mark.parametrize("name", FILES)
async def test_scenario_replays_green(name: str) -> None:
    await replays_green(name, "1.37")

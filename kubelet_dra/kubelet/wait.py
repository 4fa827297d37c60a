"""apimachinery's ``wait.Backoff`` (the kubelet retries ResourceSlice wiping with it) and ``wait.Jitter``.

Each step returns the current duration (with jitter) and multiplies it by the factor; when the
next duration would exceed the cap it is capped *and the remaining steps drop to zero*. With the
kubelet's numbers (1 s, ×2, jitter 0.2, cap 300 s, 100 steps) that means 9 attempts at nominal
0, 1, 3, 7, …, 255 s, a last wait of ≈256 s, then giving up (docs/protocol.md#resourceslice-wiping).
"""

from __future__ import annotations

import random

import attrs


@attrs.define
class Backoff:
    duration: float = 1.0
    factor: float = 2.0
    jitter: float = 0.2
    cap: float = 300.0
    steps: int = 100
    rng: random.Random = attrs.field(factory=random.Random, repr=False)

    def step(self) -> float:
        """The next wait; advances the backoff."""
        if self.steps < 1:
            return jitter(self.duration, self.jitter, self.rng)
        self.steps -= 1
        duration = self.duration
        self.duration *= self.factor
        if self.duration > self.cap:
            self.duration = self.cap
            self.steps = 0
        return jitter(duration, self.jitter, self.rng)


def jitter(duration: float, factor: float, rng: random.Random) -> float:
    """``duration`` stretched by up to ``factor`` (uniformly), as apimachinery's ``wait.Jitter``."""
    return duration + rng.random() * factor * duration if factor > 0 else duration

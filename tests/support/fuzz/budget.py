"""How much a fuzzing test does: a few fixed examples inside the suite, minutes on demand.

``FUZZ_MINUTES`` (set by ``scripts/fuzz``) gives each fuzzing test an equal share of that
time and a fresh seed; unset, each runs its brief count with seed 0. ``FUZZ_SEED`` fixes
the seed either way, to replay a run whose seed a report printed.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field

#: The fuzzing tests that share ``FUZZ_MINUTES`` between them.
FUZZ_TESTS = 5
#: Seconds any one request, message or frame may take before it counts as a hang: a hang
#: detector, generous on a loaded machine, never a measure of speed.
HANG_GUARD = 10.0


def _minutes() -> float:
    text = os.environ.get("FUZZ_MINUTES", "").strip()
    return float(text) if text else 0.0


@dataclass
class Budget:
    """Either ``brief`` cases, or cases until ``seconds`` have passed."""

    brief: int
    seconds: float = field(default_factory=lambda: _minutes() * 60 / FUZZ_TESTS)
    seed: int = field(
        default_factory=lambda: int(
            os.environ.get("FUZZ_SEED") or (random.randrange(2**32) if _minutes() else 0)
        )
    )
    started: float = field(default_factory=time.monotonic)
    done: int = 0

    @property
    def long(self) -> bool:
        return self.seconds > 0

    def more(self) -> bool:
        """Whether to try one more case (and count it)."""
        if self.long:
            going = time.monotonic() - self.started < self.seconds
        else:
            going = self.done < self.brief
        if going:
            self.done += 1
        return going

    def rng(self) -> random.Random:
        return random.Random(self.seed)

    def describe(self) -> str:
        mode = f"{self.seconds / 60:.1f} min" if self.long else "brief"
        return f"{self.done} cases ({mode}, FUZZ_SEED={self.seed})"

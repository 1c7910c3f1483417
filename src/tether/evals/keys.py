"""A trial's identity, and the session ids derived from it.

Why: a trial is known by what it is — evaluation, suite, task, perturbation, repetition, seed —
so running the same evaluation again, on any worker, arrives at the same ids and finds what is
done. The ids share a prefix per evaluation (``ev-<digest>-``), so its sessions are found in a
store without reading any of them; an attempt's session is ``<trial id>.<attempt>``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def evaluation_prefix(evaluation: str) -> str:
    return f"ev-{hashlib.sha256(evaluation.encode()).hexdigest()[:10]}-"


@dataclass(frozen=True, slots=True)
class TrialKey:
    evaluation: str
    suite: str
    task: str
    perturbation: str
    repetition: int
    seed: int
    id: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        body = json.dumps([self.suite, self.task, self.perturbation, self.repetition,
                           self.seed])
        object.__setattr__(self, "id", evaluation_prefix(self.evaluation)
                           + hashlib.sha256(body.encode()).hexdigest()[:24])

    def attempt(self, number: int) -> str:
        """The session id of attempt ``number`` (from 1)."""
        return f"{self.id}.{number}"

    def labels(self) -> dict[str, Any]:
        return {"evaluation": self.evaluation, "suite": self.suite, "task": self.task,
                "perturbation": self.perturbation, "repetition": self.repetition,
                "seed": self.seed, "trial": self.id}

    @classmethod
    def from_labels(cls, labels: Mapping[str, Any]) -> TrialKey:
        return cls(labels["evaluation"], labels["suite"], labels["task"],
                   labels["perturbation"], int(labels["repetition"]), int(labels["seed"]))

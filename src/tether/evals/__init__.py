"""Reliability evaluation: pass^k against graded answers, under seeded perturbations.

Every trial is a governed tether session whose identity is in its metadata, so a report can be
rebuilt from the store alone and any failing trial opened with ``tether audit show``. Names are
imported lazily: ``import tether.evals`` costs nothing until one is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import exports

if TYPE_CHECKING:
    from tether.evals.faults import FaultyModel, FaultyTool
    from tether.evals.judge import llm_judge
    from tether.evals.obedient import PlannedCall, obedient_model
    from tether.evals.perturb import (
        Canonical,
        DistractorTools,
        IrrelevantContext,
        OrderShuffled,
        Paraphrase,
        ProviderFaults,
        Setup,
        ToolFaults,
    )
    from tether.evals.report import Report, regressions
    from tether.evals.runner import aevaluate, evaluate, pass_at_k_with_perturbations
    from tether.evals.tasks import Suite, SuiteError, Task, load_suite
    from tether.evals.trials import stored_trials
    from tether.reasoning.graders import (
        CallRecord,
        Grade,
        Outcome,
        all_of,
        called,
        contains,
        exact_match,
        finished,
        json_schema,
        matches_model,
        not_called,
        numeric,
        output_fields,
        regex,
        state,
        trajectory,
    )

_WHERE = {
    **dict.fromkeys(("FaultyModel", "FaultyTool"), "tether.evals.faults"),
    **dict.fromkeys(("CallRecord", "Grade", "Outcome", "all_of", "called", "contains",
                     "exact_match", "finished", "json_schema", "matches_model", "not_called",
                     "numeric", "output_fields", "regex", "state", "trajectory"),
                    "tether.reasoning.graders"),
    "llm_judge": "tether.evals.judge",
    **dict.fromkeys(("PlannedCall", "obedient_model"), "tether.evals.obedient"),
    **dict.fromkeys(("Canonical", "DistractorTools", "IrrelevantContext", "OrderShuffled",
                     "Paraphrase", "ProviderFaults", "Setup", "ToolFaults"),
                    "tether.evals.perturb"),
    **dict.fromkeys(("Report", "regressions"), "tether.evals.report"),
    **dict.fromkeys(("aevaluate", "evaluate", "pass_at_k_with_perturbations"),
                    "tether.evals.runner"),
    **dict.fromkeys(("Suite", "SuiteError", "Task", "load_suite"), "tether.evals.tasks"),
    "stored_trials": "tether.evals.trials",
}
__all__ = [
    "CallRecord",
    "Canonical",
    "DistractorTools",
    "FaultyModel",
    "FaultyTool",
    "Grade",
    "IrrelevantContext",
    "OrderShuffled",
    "Outcome",
    "Paraphrase",
    "PlannedCall",
    "ProviderFaults",
    "Report",
    "Setup",
    "Suite",
    "SuiteError",
    "Task",
    "ToolFaults",
    "aevaluate",
    "all_of",
    "called",
    "contains",
    "evaluate",
    "exact_match",
    "finished",
    "json_schema",
    "llm_judge",
    "load_suite",
    "matches_model",
    "not_called",
    "numeric",
    "obedient_model",
    "output_fields",
    "pass_at_k_with_perturbations",
    "regex",
    "regressions",
    "state",
    "stored_trials",
    "trajectory",
]


__getattr__, __dir__ = exports(__name__, _WHERE, globals())

"""Every strategy with every recipe feature reruns without a divergence (strategy × feature).

Why: RERUN answers "does this runtime, with this recipe, still make the same calls from the same
inputs?" — so a session a strategy ran with tool selection, compaction, an output type, a thread
or all of them must rerun to the same requests, offers, compactions and answer. A rerun of a
repeated call, a degraded call or a cut result had reported differences that were only
tether's own notes added twice (tests/test_rerun_additions.py); this matrix holds the seam
between every strategy's journal and the rerun.
"""

from __future__ import annotations

import dataclasses

import pytest

from test_strategy_matrix import FEATURES, STRATEGIES, build
from tether import Agent, ReAct, ScriptedModel
from tether.runtime.accounting.stop import StopReason
from tether.runtime.rerun import rerun


@pytest.mark.parametrize("feature", FEATURES)
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_each_strategy_with_each_feature_reruns_as_recorded(strategy: str, feature: str) -> None:
    case = STRATEGIES[strategy]
    agent = build(case, feature, [])
    if feature in ("thread", "all"):  # the thread's first turn, by another recipe
        opener = Agent(model=ScriptedModel(["Noted: Lisbon."]), reasoning=ReAct(),
                       store=agent.store)
        opener.session("Remember: my city is Lisbon.", user_id="ada", thread="t1").run()
        session = agent.session(case.task, user_id="ada", thread="t1")
    else:
        session = agent.session(case.task)
    result = session.run()
    assert result.stop_reason is StopReason.FINISHED, result.notice
    # a recipe of its own, on the store the session was recorded in (a thread's turns are
    # kept there once, and the start names them by reference)
    report = rerun(dataclasses.replace(build(case, feature, []), store=agent.store),
                   list(session.replay()))
    assert report.matches, report.divergences
    assert report.result is not None and report.result.answer == result.answer

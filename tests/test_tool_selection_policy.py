"""Tool selection against policies: combinators whose members decide alone, a fallback the
policy degrades to, a first tool choice the policy hides."""

from __future__ import annotations

import dataclasses

from test_tool_selection import agent_with, events_of, offered, one_call, ran
from tether import Decision, Effect
from tether.policy import Action, Context, Resource, Subject
from tether.tools.selection import ToolSelection


class ReadsAmounts:
    inline = True

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision | None:
        if action.arguments.get("amount", 0) > 100:
            return Decision(Effect.DENY, "too much", "amounts")
        return None if action.tool == "calendar_add" else Decision(Effect.ALLOW, "ok", "amounts")


class NoDeleting:
    inline = True

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision | None:
        if action.tool == "delete_all_files":
            return Decision(Effect.DENY, "never", "no-deleting")
        if action.tool == "send_email":
            raise RuntimeError("mail policy unavailable")
        return None


def test_a_member_that_alone_denies_a_tool_hides_it_though_another_read_the_arguments() -> None:
    from tether.policy.combinators import DenyOverrides

    # a sub-agent's policy with its caller's: the first member reads arguments, the second
    # refuses one tool outright and fails on another; abstaining is not denying
    policy = DenyOverrides(ReadsAmounts(), NoDeleting())
    agent, seen = agent_with(["done"], policy=policy, selection=ToolSelection(
        k=8, always=("delete_all_files", "send_email", "calendar_add", "refund")))
    session = agent.session("delete files, send an email, add a calendar event, refund")
    session.run()
    names = offered(seen[0])
    assert "delete_all_files" not in names and "send_email" not in names
    assert "refund" in names
    # every member abstains on calendar_add, so every call to it is denied at the gate; but
    # the first member read the arguments to abstain, so no denial is proven: offered
    assert "calendar_add" in names
    assert events_of(session.replay(), "tools.selected")[0]["denied"] == [
        "delete_all_files", "send_email"]


class Degrading:
    inline = True

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if action.tool == "get_weather":
            return Decision(Effect.DEGRADE, "use the calendar", "degrading",
                            fallback="calendar_add")
        if action.tool == "delete_all_files":
            return Decision(Effect.DENY, "never", "degrading")
        return Decision(Effect.ALLOW, "ok", "degrading")


def test_a_fallback_the_policy_degrades_to_runs_though_the_turn_did_not_offer_it() -> None:
    ran.clear()
    agent, seen = agent_with([one_call("get_weather", text="Paris"), "done"],
                             policy=Degrading(), selection=ToolSelection(k=1))
    result = agent.run("weather in Paris")
    assert offered(seen[0]) == ["get_weather"]
    assert result.trajectory.steps[0].results[0].status == "ok"
    assert ran == ["calendar_add"]


def test_a_first_tool_choice_the_policy_hides_is_not_sent() -> None:
    agent, seen = agent_with(["done"], policy=Degrading(), selection=ToolSelection(
        k=1, always=("delete_all_files", "send_email")))
    agent = dataclasses.replace(agent, first_tool_choice="delete_all_files")
    agent.run("weather")
    assert seen[-1].tool_choice is None
    assert "delete_all_files" not in offered(seen[-1])
    agent = dataclasses.replace(agent, first_tool_choice="send_email")
    agent.run("weather")
    assert seen[-1].tool_choice == "send_email"

# Vendored from AgentDyn (MIT, see LICENSE and SOURCE.md beside it); do not edit.
from tether.evals.agentdojo.agentdyn._vendor.dailylife.injection_tasks import DailyLifeInjectionTask  # noqa: F401 - Register tasks
from tether.evals.agentdojo.agentdyn._vendor.dailylife.task_suite import task_suite as dailylife_task_suite
from tether.evals.agentdojo.agentdyn._vendor.dailylife.user_tasks import DailyLifeUserTask  # noqa: F401 - Register tasks

__all__ = ["dailylife_task_suite"]

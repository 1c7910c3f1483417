# Vendored from AgentDyn (MIT, see LICENSE and SOURCE.md beside it); do not edit.
from tether.evals.agentdojo.agentdyn._vendor.github.injection_tasks import GithubInjectionTask  # noqa: F401 - Register tasks
from tether.evals.agentdojo.agentdyn._vendor.github.task_suite import task_suite as github_task_suite
from tether.evals.agentdojo.agentdyn._vendor.github.user_tasks import GithubUserTask  # noqa: F401 - Register tasks

__all__ = ["github_task_suite"]

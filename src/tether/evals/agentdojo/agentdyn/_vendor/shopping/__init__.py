# Vendored from AgentDyn (MIT, see LICENSE and SOURCE.md beside it); do not edit.
from tether.evals.agentdojo.agentdyn._vendor.shopping.injection_tasks import ShoppingInjectionTask  # noqa: F401 - Register tasks
from tether.evals.agentdojo.agentdyn._vendor.shopping.task_suite import task_suite as shopping_task_suite
from tether.evals.agentdojo.agentdyn._vendor.shopping.user_tasks import ShoppingUserTask  # noqa: F401 - Register tasks

__all__ = ["shopping_task_suite"]

# Vendored from AgentDyn (MIT, see LICENSE and SOURCE.md beside it); do not edit.

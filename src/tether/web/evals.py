"""placeholder"""

from starlette.routing import Route

ROUTES: list[Route] = []

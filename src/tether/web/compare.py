"""Two sessions side by side, step by step: where the calls, the decisions and the spend part.

Why: the question users of tracing consoles ask most is "what changed between these two runs?"
— a rerun against its original after a policy or runtime change, two trials of one evaluation
task that ended differently. This page aligns both sessions by step and marks every step where
the calls asked, the decisions made or the spend differ, the first one highlighted.

Decision: both sessions are opened through ``web._access`` (another tenant's session is "not
found", like the timeline); the alignment is ``web._steps.align``. Each side's header is the
timeline's own (``journal.views.timeline.header``: agent, task, metadata such as an evaluation
trial's labels). The pair lives in the URL (``?a=ID&b=ID``), so a comparison can be shared.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tether.journal.views.timeline import header, spend_line
from tether.web._access import open_session
from tether.web._steps import align
from tether.web.pages import console, identity, render


async def compare_page(request: Request) -> Response:
    a, b = request.query_params.get("a", "").strip(), request.query_params.get("b", "").strip()
    if not a or not b:
        return render(request, "compare.html", a=a, b=b, rows=None)
    store, viewer = console(request).store, identity(request)
    left, right = open_session(store, viewer, a), open_session(store, viewer, b)
    rows = align(left.events, right.events)
    first = next((r for r in rows if r.first), None)
    return render(request, "compare.html", a=a, b=b, rows=rows, first=first,
                  heads=(header(left.events)[1:], header(right.events)[1:]),
                  spends=(spend_line(left.events), spend_line(right.events)),
                  broken=(left.broken, right.broken))


ROUTES = [Route("/compare", compare_page)]

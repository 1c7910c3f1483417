"""The evaluations pages: the reports ``tether eval`` and ``tether eval agentdojo`` wrote.

Why: an evaluation's result — how reliably the agent passes (pass^k), what it cost, which
trials failed and why — should be one click from the sessions those trials ran, not a file on
someone's disk. ``/evals`` lists the reports in the console's report directories; ``/evals/NAME``
shows one: curves, the figures per perturbation, run metrics and failing trials (each a link to
its session's timeline); for AgentDojo, the table of utility and attack success per suite.

Decision: the console draws the report from its JSON (``web._reports``), with classes from
``static/timeline.css``: the HTML the commands write has an inline stylesheet the console's
content-security policy forbids. A failing trial's session link works only for a viewer who
may see that session (the timeline checks the tenant).
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tether.web import _reports
from tether.web.pages import console, render


async def list_page(request: Request) -> Response:
    directories = console(request).reports
    return render(request, "evals.html", reports=list(_reports.find(directories).values()),
                  directories=directories)


async def report_page(request: Request) -> Response:
    name = request.path_params["name"]
    found = _reports.find(console(request).reports).get(name)
    if found is None:
        raise HTTPException(404, f"no report {name!r} in this console's report directories; "
                            "see the list at /evals")
    data = found.data
    if found.kind == _reports.AGENTDOJO:
        return render(request, "evals_agentdojo.html", report=found, rows=data.get("rows") or [])
    if found.kind != _reports.EVALUATION:
        return render(request, "evals_report.html", report=found, k=0, curves=[], metrics=[],
                      failing=[], slices={}, size=(_reports.W, _reports.H), status_code=422)
    trials = data.get("trials") or []
    return render(request, "evals_report.html", report=found, k=int(data.get("k") or 0),
                  curves=_reports.curves(data), metrics=_reports.metrics(data),
                  slices=data.get("perturbations") or {}, size=(_reports.W, _reports.H),
                  failing=[t for t in trials if not t.get("passed")])


ROUTES = [
    Route("/evals", list_page),
    Route("/evals/{name:path}", report_page),
]

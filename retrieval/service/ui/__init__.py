"""The memory browser at ``/ui`` on ``memory serve``: a person sees, searches and fixes
what their agents remember.

Sign in with an API key (``signin``: an HTTP-only session cookie, CSRF-checked forms);
then the same namespace rules as the API hold, through the same ``Service`` calls: the
key's own namespace, a granted one read-only. Pages: memories (search, or list by
category, kind, status and project), one memory (its source turns, its timeline, its
feedback; edit, forget, pin and unpin take effect at once), an entity (its profile and
neighbours) and the latest health report's plots. Server-rendered with Jinja2; htmx
(vendored under ``static/``, nothing from a CDN) swaps the results as filters change.
"""

from __future__ import annotations

import re

from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import FastAPI, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from retrieval.service.core import Forbidden, Refused, Service
from retrieval.service.keys import ApiKey
from retrieval.service.ui import views
from retrieval.service.ui.signin import COOKIE, LOGIN_COOKIE, SignIn, SignIns, same
from retrieval.store import ItemStore

HERE = Path(__file__).parent
PAGE_SIZE = 50
SEARCH_SIZE = 20  # a search shows its best twenty, best first
_ID = re.compile(r"^[A-Za-z0-9:_.\-]{1,64}$")
_ACTIONS = ("forget", "pin", "unpin")


class _SignedOut(Exception):
    """No live session: the page sends the browser to the sign-in form."""


def mount(app: FastAPI, service: Service) -> None:
    """Add the browser's routes under ``/ui`` to ``app``."""
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.globals["quote"] = lambda text: quote(str(text), safe="")
    signins = SignIns(service.keys.engine)
    app.mount("/ui/static", StaticFiles(directory=str(HERE / "static")), name="ui-static")

    def page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, context, status_code=status,
                                          headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY",
                                                   "Content-Security-Policy": _CSP, "Referrer-Policy": "same-origin"})

    def signed_in(request: Request) -> tuple[ApiKey, SignIn]:
        found = signins.find(request.cookies.get(COOKIE))
        key = service.keys.live(found.key_id) if found is not None else None
        if found is None or key is None:
            raise _SignedOut()
        return key, found

    def checked(request: Request, csrf: str | None) -> tuple[ApiKey, SignIn]:
        key, found = signed_in(request)
        if not same(csrf or request.headers.get("x-csrf-token"), found.csrf):
            raise Forbidden("the form is out of date (CSRF token): reload the page and try again")
        return key, found

    @app.exception_handler(_SignedOut)
    async def _to_signin(request: Request, _exc: Exception) -> Response:
        if request.headers.get("hx-request"):
            return Response(status_code=401, headers={"HX-Redirect": "/ui/login"})
        return RedirectResponse("/ui/login", status_code=303)

    def _refused(request: Request, exc: Refused, key: ApiKey, found: SignIn) -> HTMLResponse:
        return page(request, "refused.html", exc.status, key=key, csrf=found.csrf, reason=exc.message)

    @app.get("/ui", include_in_schema=False)
    @app.get("/ui/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse("/ui/memories", status_code=303)

    @app.get("/ui/login", include_in_schema=False)
    def login_form(request: Request) -> HTMLResponse:
        token = views.new_token()
        response = page(request, "login.html", login_token=token, error=None)
        _set_cookie(response, request, LOGIN_COOKIE, token, max_age=3600)
        return response

    @app.post("/ui/login", include_in_schema=False)
    def login(request: Request, key: str = Form("", max_length=200), login_token: str = Form("", max_length=100)
              ) -> Response:
        if not same(login_token, request.cookies.get(LOGIN_COOKIE)):
            return page(request, "login.html", 403, login_token=login_token,
                        error="The form is out of date: reload the page and sign in again.")
        found = service.keys.verify(key.strip())
        if found is None:
            return page(request, "login.html", 401, login_token=login_token,
                        error="That is not a valid API key (ask for one with `memory keys create`).")
        token, _ = signins.start(found.key_id)
        response = RedirectResponse("/ui/memories", status_code=303)
        _set_cookie(response, request, COOKIE, token, max_age=int(signins.lifetime.total_seconds()))
        response.delete_cookie(LOGIN_COOKIE, path="/ui")
        return response

    @app.post("/ui/logout", include_in_schema=False)
    def logout(request: Request, csrf: str = Form("", max_length=100)) -> Response:
        checked(request, csrf)
        signins.end(request.cookies.get(COOKIE))
        response = RedirectResponse("/ui/login", status_code=303)
        response.delete_cookie(COOKIE, path="/ui")
        return response

    @app.get("/ui/memories", include_in_schema=False)
    def memories(request: Request, q: str = "", category: str = "", kind: str = "", status: str = "active",
                 project: str = "", namespace: str = "", page_no: int = 1) -> HTMLResponse:
        key, found = signed_in(request)
        try:
            reader = service.single_reader(key, namespace or None)
            filters = views.Filters.read(q, category, kind, status, project, max(1, min(page_no, 1000)))
            if filters.q:
                rows = views.searched(service, key, reader, filters, SEARCH_SIZE)
            else:
                rows = views.listed(reader, filters, PAGE_SIZE)
        except Refused as exc:
            return _refused(request, exc, key, found)
        context = dict(key=key, csrf=found.csrf, rows=rows, filters=filters, namespace=reader.namespace,
                       choices=views.choices(reader), more=len(rows) == PAGE_SIZE and not filters.q,
                       next_url="/ui/memories?" + urlencode({**filters.query(), "page_no": filters.page_no + 1}))
        name = "results.html" if request.headers.get("hx-request") else "memories.html"
        return page(request, name, **context)

    @app.get("/ui/memories/{item_id}", include_in_schema=False)
    def memory(request: Request, item_id: str, namespace: str = "", done: str = "") -> HTMLResponse:
        key, found = signed_in(request)
        if not _ID.match(item_id):
            return page(request, "missing.html", 404, key=key, csrf=found.csrf, what=item_id)
        try:
            reader = service.single_reader(key, namespace or None)
            item = views.item_page(reader, item_id)
        except ItemStore.DoesNotExist:
            return page(request, "missing.html", 404, key=key, csrf=found.csrf, what=item_id)
        except Refused as exc:
            return _refused(request, exc, key, found)
        writable = key.may_write(reader.namespace or key.namespace)
        return page(request, "item.html", key=key, csrf=found.csrf, item=item, writable=writable,
                    done=views.DONE.get(done))

    @app.post("/ui/memories/{item_id}/edit", include_in_schema=False)
    def edit(request: Request, item_id: str, content: str = Form(..., min_length=1, max_length=4000),
             csrf: str = Form("", max_length=100)) -> Response:
        key, found = checked(request, csrf)
        try:
            full = service.writer(key).update(item_id, content.strip())
        except (Refused, ItemStore.DoesNotExist, ValueError) as exc:
            return _write_refused(request, exc, key, found)
        return RedirectResponse(f"/ui/memories/{quote(full, safe='')}?done=update", status_code=303)

    @app.post("/ui/memories/{item_id}/{action}", include_in_schema=False)
    def act(request: Request, item_id: str, action: str, csrf: str = Form("", max_length=100)) -> Response:
        key, found = checked(request, csrf)
        if action not in _ACTIONS:
            return page(request, "missing.html", 404, key=key, csrf=found.csrf, what=action)
        try:
            full = getattr(service.writer(key), action)(item_id)
        except (Refused, ItemStore.DoesNotExist, ValueError) as exc:
            return _write_refused(request, exc, key, found)
        return RedirectResponse(f"/ui/memories/{quote(full, safe='')}?done={action}", status_code=303)

    def _write_refused(request: Request, exc: Exception, key: ApiKey, found: SignIn) -> HTMLResponse:
        if isinstance(exc, Refused):
            return _refused(request, exc, key, found)
        status = 404 if isinstance(exc, ItemStore.DoesNotExist) else 422
        return page(request, "refused.html", status, key=key, csrf=found.csrf, reason=str(exc).split(" under ")[0])

    @app.get("/ui/entities/{name}", include_in_schema=False)
    def entity(request: Request, name: str, namespace: str = "") -> HTMLResponse:
        key, found = signed_in(request)
        try:
            reader = service.single_reader(key, namespace or None)
        except Refused as exc:
            return _refused(request, exc, key, found)
        profile = views.entity_page(reader, name[:128])
        return page(request, "entity.html", 200 if profile.known else 404, key=key, csrf=found.csrf, profile=profile)

    @app.get("/ui/health", include_in_schema=False)
    def health(request: Request) -> HTMLResponse:
        key, found = signed_in(request)
        reader = service.single_reader(key)
        return page(request, "health.html", key=key, csrf=found.csrf, report=views.health_page(reader))

    @app.get("/ui/health/{day}/{plot}", include_in_schema=False)
    def health_plot(request: Request, day: str, plot: str) -> Response:
        signed_in(request)
        data = views.health_plot(service.client.paths, day, plot)
        if data is None:
            return Response(status_code=404)
        return Response(data, media_type="image/png", headers={"Cache-Control": "private, max-age=300"})


# Everything from this origin, nothing inline but the stylesheet's own rules: no script
# from elsewhere can run even if a memory's words held markup (Jinja2 escapes them too).
_CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def _set_cookie(response: Response, request: Request, name: str, value: str, *, max_age: int) -> None:
    response.set_cookie(name, value, max_age=max_age, path="/ui", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")

"""`vmbisect serve`'s web application: Starlette with Jinja2 templates (autoescape on: campaign
names, commit subjects and reasons are user and git data), its CSS and JS served by itself (no
external asset; works offline), refreshed in place by polling an HTML fragment every few
seconds. What it shows comes from reader.Reader; this module only maps URLs to it.

Security model (docs/dashboard.md): every GET only reads. Cancel and requeue exist only when
the app was made with a token (`--allow-control`), and then only as a POST whose body carries
that token, compared in constant time; the token is never in a page. Every page is sent with a
Content-Security-Policy that allows only the app's own script and style; a campaign's report
(HTML made from user data) is sent with a policy of its own that sandboxes it, allows no script
and loads nothing, and the campaign page shows it in a sandboxed iframe. An unreachable store or
an unknown campaign is a page saying so, never a traceback.
"""

from __future__ import annotations

import hmac
import sys
import threading
from pathlib import Path
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs

from jinja2 import Environment, FileSystemLoader
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from orchestrator.errors import InfraError, UserError
from orchestrator.web.reader import Catalogue, Reader
from orchestrator.web.views import ago

HERE = Path(__file__).parent
REFRESH_MS = 2000
PAGE_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
               "frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
REPORT_POLICY = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'"
ACTIONS = ("cancel", "requeue")
MAX_FORM = 4096


class Source:
    """The store, opened at the first request that needs it and again after it failed to open."""

    def __init__(self, url: str | None, kinds: Catalogue) -> None:
        self.url, self.kinds = url, kinds
        self._reader: Reader | None = None
        self._lock = threading.Lock()

    def reader(self) -> Reader:
        from orchestrator.store import Store

        with self._lock:
            if self._reader is None:
                self._reader = Reader(Store(self.url), self.kinds)
            return self._reader


def shown_url(url: str | None) -> str:
    """The store's URL without its password."""
    from sqlalchemy.engine import make_url

    from orchestrator.store import default_url

    try:
        return make_url(url or default_url()).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - a URL that does not parse is shown as the error page says
        return "(not a database URL)"


def _environment() -> Environment:
    from orchestrator.render.scale import whole_or_4g

    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, trim_blocks=True,
                      lstrip_blocks=True)
    env.filters["when"] = lambda t: "-" if t is None else f"{t:%Y-%m-%d %H:%M:%S} UTC"
    env.filters["num"] = lambda v: "-" if v is None else whole_or_4g(v)
    env.globals["ago"] = ago
    return env


class Pages:
    """The endpoints: each GET reads through the Source and renders a template; `control` is
    the one POST."""

    def __init__(self, source: Source, token: str | None, refresh_ms: int) -> None:
        self.source, self.token = source, token
        self.templates = Jinja2Templates(env=_environment())
        self.common = {"store": shown_url(source.url), "control": token is not None, "refresh_ms": refresh_ms}

    def page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        return self.templates.TemplateResponse(request, name, {**self.common, **context}, status_code=status,
                                               headers={"Content-Security-Policy": PAGE_POLICY})

    def message(self, request: Request, title: str, text: str, status: int) -> Response:
        fragment = request.url.path.startswith("/fragment/")
        return self.page(request, "message_live.html" if fragment else "message.html", status, title=title, text=text)

    def overview(self, request: Request) -> Response:
        live = request.url.path.startswith("/fragment/")
        return self.page(request, "overview_live.html" if live else "overview.html",
                         data=self.source.reader().overview())

    def campaign(self, request: Request) -> Response:
        from orchestrator.queue import takeovers

        live = request.url.path.startswith("/fragment/")
        reader = self.source.reader()
        data = reader.detail(request.path_params["id"])
        return self.page(request, "campaign_live.html" if live else "campaign.html", data=data,
                         takeovers=[takeovers.line(t) for t in takeovers.of(reader.store, request.path_params["id"])])

    def report(self, request: Request) -> Response:
        """The report under its own policy; while there is none, a note under the same policy
        (it is shown in the campaign page's frame)."""
        cid = request.path_params["id"]
        reader = self.source.reader()
        state = reader.store.campaign(cid).state  # an unknown id is a 404 page
        status = 200
        try:
            text = reader.report(cid)
        except (UserError, InfraError, OSError, ValueError, KeyError) as exc:
            text, status = None, 404
            note = f"Its report cannot be made here: {exc}"
        else:
            note = f"The report is written when the campaign ends; it is {state}."
        if text is None:
            text = self.templates.get_template("report_none.html").render(campaign=cid, note=note)
        return HTMLResponse(text, status, headers={"Content-Security-Policy": REPORT_POLICY,
                                                   "X-Content-Type-Options": "nosniff",
                                                   "Referrer-Policy": "no-referrer"})

    async def control(self, request: Request) -> Response:
        cid, action = request.path_params["id"], request.path_params["action"]
        if action not in ACTIONS:
            raise HTTPException(404)
        if self.token is None:
            return self.message(request, "Control is off", "This dashboard is read-only; start it with "
                                "vmbisect serve --allow-control to cancel or requeue campaigns.", 403)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM:
                return self.message(request, "Too large", "A control request is a token, not more.", 413)
        given = parse_qs(body.decode("utf-8", "replace")).get("token", [""])[0]
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return self.message(request, "Wrong token", "The token is the one vmbisect serve printed when it "
                                "started.", 403)
        try:
            await run_in_threadpool(_act, self.source, action, cid)
        except UserError as exc:
            return self.message(request, f"Campaign {cid}: not done", str(exc).removeprefix("id: "), 409)
        return self.message(request, f"Campaign {cid}: {action} done",
                            f"Campaign {cid} was {'cancelled' if action == 'cancel' else 'queued again'}.", 200)

    # ---- what goes wrong, as pages ----

    def refused(self, request: Request, exc: Exception) -> Response:
        """A UserError: an unknown campaign on a campaign's URL; elsewhere a store URL that cannot work."""
        if "id" in request.path_params:
            return self.message(request, "No such campaign", str(exc).removeprefix("campaign: "), 404)
        return self.message(request, "The store cannot be opened", str(exc), 503)

    def unreachable(self, request: Request, exc: Exception) -> Response:
        return self.message(request, "The store does not answer", f"{self.common['store']}: {exc}", 503)

    def not_found(self, request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        return self.message(request, "Not found" if status == 404 else f"HTTP {status}",
                            f"Nothing at {request.url.path}.", status)

    def failed(self, request: Request, exc: Exception) -> Response:
        print(f"vmbisect serve: {request.url.path}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return self.message(request, "The dashboard failed", f"{type(exc).__name__}: {str(exc)[:300]}", 500)


def create_app(store_url: str | None, kinds: Catalogue, token: str | None = None, listen_host: str = "127.0.0.1",
               refresh_ms: int = REFRESH_MS) -> Starlette:
    """The dashboard over the store at `store_url` (None: the default store) and the kind table
    `kinds` (commands/serve.py's `catalogue()`). `token`: cancel
    and requeue are allowed with it (None: read-only). `listen_host`: on a loopback address only
    requests naming a loopback host are answered (no DNS rebinding from a web page)."""
    p = Pages(Source(store_url, kinds), token, refresh_ms)
    routes = [
        Route("/", p.overview),
        Route("/fragment/overview", p.overview),
        Route("/campaigns/{id:int}", p.campaign),
        Route("/fragment/campaigns/{id:int}", p.campaign),
        Route("/campaigns/{id:int}/report", p.report),
        Route("/campaigns/{id:int}/{action:str}", p.control, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Response | Awaitable[Response]]] = {
        UserError: p.refused, InfraError: p.unreachable, HTTPException: p.not_found, Exception: p.failed}
    # Starlette reads the host before the first ':', so an IPv6 loopback listener is not narrowed
    hosts = ["127.0.0.1", "localhost"] if listen_host in ("127.0.0.1", "localhost") else ["*"]
    return Starlette(routes=routes, exception_handlers=handlers,
                     middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts)])


def _act(source: Source, action: str, campaign_id: int) -> None:
    from orchestrator.queue import state

    reader = source.reader()
    reader.store.campaign(campaign_id)
    (state.cancel if action == "cancel" else state.requeue)(reader.store, campaign_id)


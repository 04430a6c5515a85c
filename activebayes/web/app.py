"""The labelling page's ASGI application (Starlette), over one `PoolStore`.

    app = create_app(ServeConfig("sqlite:///study.db", grants=[Grant.new("ann", "digits")]))
    uvicorn.run(app, host="127.0.0.1", port=8000)

Routes (every one under /p/{project}/ needs `?token=` of a grant for that project, else 403):

    GET  /p/{project}/label      the labelling page (a shell; its script asks for the first item)
    GET  /p/{project}/status     counts, labellers, learning curve, rounds
    GET  /p/{project}/summary    {"version"}: changes whenever the status page would (it asks every few
                                 seconds, and fetches itself again when it changed)
    GET  /p/{project}/image      ?round=&key= the image of one of the waiting round's queries

An item is named by its key, or in an image pool by "query R" (`Labelling.name`: file paths may
spell the class), in "key" of the requests, "shown" and "key" of the answers, and the card.
The card says first what it asks (`question.asked`: "Which class is this item? a, b or c").
The card shows the round's prediction for the item ("model: 7 (62%)"; for regression the mean ±
sd, and the mean as the number box's placeholder) only with `ServeConfig.show_model_guess`: the
round asks about the items its model is unsure or wrong about, and a labeller shown its guess
leans towards it (the prediction stays in the store, the round file and `export`).
    GET  /p/{project}/progress   the running round's stage (JSON)
    POST /p/{project}/next       the next item's card (takes its lease); {"prefer": key, "unskip": true}
    POST /p/{project}/renew      keeps the lease on the item shown ({"round", "key"})
    POST /p/{project}/answer     {"round", "key", "value"}: one transaction, then the next card
    POST /p/{project}/skip       {"round", "key"}
    POST /p/{project}/undo       takes back this labeller's last answer of the waiting round, or with
                                 {"key"} their answer to that item (the log's "change"); not while a
                                 round started here runs: it is closing that round
    POST /p/{project}/round      runs the next round in the background
    GET  /static/...             the page's own CSS and JavaScript (no token: nothing secret)

A POST carries a JSON object with "csrf" (`AccessKeys.csrf_token`), as `application/json`; a
request that fails any check is answered 400 or 403 before anything is written.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from activebayes.errors import DataError, StoreError
from activebayes.store.engine import DATABASE_AWAY, database_gone
from activebayes.web.access import SECURITY_HEADERS, AccessKeys, Grant
from activebayes.web.items import image_pixels, image_png, original_image
from activebayes.web.labelling import BadAnswer, Card, Labelling, Outcome, RoundGone
from activebayes.web.question import asked
from activebayes.web.rounds import STAGES, RoundWorker
from activebayes.web.shortcuts import class_keys, digit_named
from activebayes.web.status import open_queries, project_status, status_version

HERE = Path(__file__).resolve().parent
MAX_BODY = 64 * 1024  # an answer is a few hundred bytes
LOG = logging.getLogger(__name__)
DATA_AWAY = ("the project's data cannot be loaded: a file it needs (its data file, an image) is missing or changed since `pool add` "
             "(the terminal running `activebayes serve` says which file); restore it and reload this page")


@dataclass(frozen=True)
class ServeConfig:
    """What `create_app` serves: the database, who may label which project, how many answers each
    item needs, how long a lease lasts, the callback that runs a round (None: no button), and
    whether the card shows the round's prediction for the item (`show_model_guess`)."""

    db_url: str
    grants: tuple[Grant, ...]
    answers_per_item: int = 1
    lease_seconds: float = 120.0
    run_round: Callable[[str], Any] | None = None
    show_model_guess: bool = False  # the round's prediction on the card (anchors the labeller: off by default)
    secret: bytes | None = field(default=None, repr=False)


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


FORBIDDEN = ("forbidden: open the URL that `activebayes serve` printed for you (it holds your token; "
             "a restarted server prints new ones)")


def create_app(config: ServeConfig) -> Any:
    """The Starlette application of `config` (see the module docstring)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles
    from starlette.templating import Jinja2Templates

    from activebayes.data import load_project_data
    from activebayes.store import PoolStore

    store = PoolStore(config.db_url, create=False, upgrade=False)
    keys = AccessKeys(config.grants, config.secret)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    worker = RoundWorker(config.run_round)
    pages: dict[str, Labelling] = {}

    loading = threading.Lock()

    def labelling(project: str) -> Labelling:
        sha256 = store.project(project).data_sha256
        with loading:  # one page state per project, its data file loaded (and checked) once, and again after `pool add --append`
            page = pages.get(project)
            if page is None or page.info.data_sha256 != sha256:
                try:
                    data = load_project_data(store, project)
                except DataError as exc:  # its data file or image folder changed under the server: one line, not a bare 500
                    LOG.error("project %r: %s", project, exc)  # the files it names may spell classes: the terminal's, not the page's
                    raise _Refused(409, DATA_AWAY) from None
                pages[project] = Labelling(store, project, data, answers_per_item=config.answers_per_item,
                                           lease_seconds=config.lease_seconds, labellers=page.labellers if page else None)  # fmt: skip
            return pages[project]

    def grant_of(request: Request) -> Grant:
        grant = keys.grant_for(request.query_params.get("token"), request.path_params["project"])
        if grant is None:
            raise _Refused(403, FORBIDDEN)
        return grant

    async def body_of(request: Request, grant: Grant) -> dict[str, Any]:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            raise _Refused(400, "expected a JSON body (application/json)")
        raw = await request.body()
        if len(raw) > MAX_BODY:
            raise _Refused(400, f"the body is larger than {MAX_BODY} bytes")
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise _Refused(400, f"the body is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise _Refused(400, "expected a JSON object")
        if not keys.csrf_ok(grant, body.get("csrf")):
            raise _Refused(403, "forbidden: missing or wrong CSRF token; reload the page")
        return body

    def card_json(page: Labelling, card: Card, grant: Grant) -> dict[str, Any]:
        guess = card.query.prediction if card.query is not None and config.show_model_guess else None
        html = templates.get_template("_card.html").render(card=card, info=page.info, token=grant.token, project=page.project, guess=guess,
                                                           rounds=worker.available, comma=page.writing == "decimal comma", keypad=page.keypad,
                                                           question=asked(page.info), answers=class_keys(page.info.classes or ()))  # fmt: skip
        return {"card": html, "round": card.round, "shown": card.name,
                "unlabelled": card.unlabelled, "held": card.held, "open": card.open}  # fmt: skip

    def outcome_json(outcome: Outcome) -> dict[str, Any]:
        return {"status": outcome.status, "key": outcome.key, "value": outcome.value, "message": outcome.message}

    def guarded(handler: Callable[..., Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            try:
                response = await handler(request)
            except _Refused as exc:
                response = PlainTextResponse(str(exc), status_code=exc.status)
            except BadAnswer as exc:
                response = JSONResponse({"status": "bad", "message": str(exc)}, status_code=400)
            except DATABASE_AWAY as exc:  # not committed (or, dropped during the commit, maybe): the same again is safe
                response = JSONResponse({"status": "unavailable", "message": f"{database_gone(exc)}; try again in a moment"}, status_code=503)
            return response

        return endpoint

    def page_context(request: Request, grant: Grant, **more: Any) -> dict[str, Any]:
        return {"request": request, "project": grant.project, "labeller": grant.labeller, "token": grant.token,
                "csrf": keys.csrf_token(grant), "rounds": worker.available, **more}  # fmt: skip

    async def label_page(request: Request) -> Response:
        grant = grant_of(request)
        page = await run_in_threadpool(labelling, grant.project)
        given = await run_in_threadpool(page.given, grant.labeller)  # listed again, each with its change button
        return templates.TemplateResponse(request, "label.html", page_context(request, grant, info=page.info, given=given,
                                          lease_seconds=config.lease_seconds, digits_named=digit_named(page.info.classes or ())))  # fmt: skip

    async def status_page(request: Request) -> Response:
        grant = grant_of(request)
        page = await run_in_threadpool(labelling, grant.project)  # items named as the labelling page names them
        version = await run_in_threadpool(status_version, store, grant.project)  # before the figures: a change meanwhile shows again
        summary = await run_in_threadpool(project_status, store, grant.project, page.name)
        latest = summary["latest"]
        wanting = await run_in_threadpool(page.still_wanting, latest.number) if latest is not None and latest.status.waiting else 0
        return templates.TemplateResponse(request, "status.html", page_context(request, grant, s=summary, stages=STAGES, version=version,
                                          wanting=wanting, answers_per_item=config.answers_per_item, by_rank=page.hides_keys))  # fmt: skip

    async def summary(request: Request) -> Response:
        grant = grant_of(request)
        return JSONResponse({"version": await run_in_threadpool(status_version, store, grant.project)})

    def image_bytes(project: str, number: str, key: str | None) -> tuple[bytes, str]:
        page = labelling(project)
        query = page.waiting_query(number, key)
        if query is None:
            raise _Refused(404, "no such item in the waiting round")
        original = original_image(page.data, query.key)
        if original is not None:
            return original
        pixels = image_pixels(page.data, query.row)
        if pixels is None:
            raise _Refused(404, "this item is not an image")
        return image_png(pixels), "image/png"

    async def image(request: Request) -> Response:
        grant = grant_of(request)
        params = request.query_params
        content, media_type = await run_in_threadpool(image_bytes, grant.project, params.get("round", ""), params.get("key"))
        return Response(content, media_type=media_type)

    async def progress(request: Request) -> Response:
        grant = grant_of(request)
        run = worker.last(grant.project)
        running = bool(run and run.running)
        latest = await run_in_threadpool(store.latest_round, grant.project)
        number = latest.number if latest is not None else None
        stage = STAGES.get(latest.status.value, latest.status.value) if latest is not None else None
        answered = latest is not None and latest.status.waiting and await run_in_threadpool(open_queries, store, grant.project, latest) == 0
        if running and (latest is None or latest.status.finished or answered):  # the page's round has not recorded itself yet
            number, stage = (number or 0) + 1, "starting"
        return JSONResponse({"running": running, "error": run.error if run else None, "round": number, "stage": stage})

    async def next_item(request: Request) -> Response:
        grant = grant_of(request)
        body = await body_of(request, grant)
        page = await run_in_threadpool(labelling, grant.project)
        if body.get("unskip"):
            page.unskip(grant.labeller)
        prefer = body.get("prefer") if isinstance(body.get("prefer"), str) else None
        card = await run_in_threadpool(page.next_card, grant.labeller, prefer)
        return JSONResponse(card_json(page, card, grant))

    async def renew(request: Request) -> Response:
        grant = grant_of(request)
        body = await body_of(request, grant)
        page = await run_in_threadpool(labelling, grant.project)
        held = await run_in_threadpool(page.renew, grant.labeller, body.get("round"), body.get("key"))
        return JSONResponse({"held": held})

    def action(do: Callable[[Labelling, str, dict[str, Any]], Outcome]) -> Callable[[Request], Any]:
        async def handler(request: Request) -> Response:
            grant = grant_of(request)
            body = await body_of(request, grant)
            page = await run_in_threadpool(labelling, grant.project)
            try:
                outcome = await run_in_threadpool(do, page, grant.labeller, body)
            except RoundGone as exc:  # nothing written: say why, and show what is open now rather than the dead item
                name = body.get("key") if isinstance(body.get("key"), str) else None
                outcome = Outcome("refused", name, None, f"{exc}: nothing was saved for {name or 'the item'}; showing what is open now")
            prefer = outcome.key if outcome.status == "undone" else None
            try:
                card = await run_in_threadpool(page.next_card, grant.labeller, prefer)
            except DATABASE_AWAY as exc:  # the action committed: say so, without a next item
                return JSONResponse({**outcome_json(outcome), "next": f"the next item did not load: {database_gone(exc)}; it comes once the database is back"})
            return JSONResponse({**outcome_json(outcome), **card_json(page, card, grant)})

        return handler

    async def start_round(request: Request) -> Response:
        grant = grant_of(request)
        await body_of(request, grant)
        if not worker.available:
            raise _Refused(400, "this server runs no rounds; run `activebayes round` in a terminal")
        latest = await run_in_threadpool(store.latest_round, grant.project)
        count = await run_in_threadpool(open_queries, store, grant.project, latest)
        if count:
            raise _Refused(409, f"round {latest.number} still waits for {count} answer{'s' if count != 1 else ''}; "
                                "answer or skip them here first (a round starts once every query is answered)")  # fmt: skip
        run = worker.start(grant.project)
        if run is None:
            return JSONResponse({"started": False, "message": "a round started from this page is still running"})
        return JSONResponse({"started": True, "message": "the next round is running"})

    async def forbidden(request: Request) -> Response:
        raise _Refused(403, FORBIDDEN)

    def answer(page: Labelling, who: str, body: dict[str, Any]) -> Outcome:
        value = body.get("value")
        if not isinstance(value, (str, int, float)) or isinstance(value, bool) or not str(value).strip():
            raise BadAnswer("expected a label in 'value'")
        return page.answer(who, body.get("round"), body.get("key"), str(value).strip())

    def undo(page: Labelling, who: str, body: dict[str, Any]) -> Outcome:
        run = worker.last(page.project)
        if run is not None and run.running:  # the round started here closes the waiting one: taking an answer back would reopen it
            return Outcome("nothing", message="the next round is starting: the answers of this round can no longer be taken back")
        name = body.get("key")
        return page.undo(who, name if isinstance(name, str) else None)

    routes = [
        Route("/p/{project}/label", guarded(label_page)),
        Route("/p/{project}/status", guarded(status_page)),
        Route("/p/{project}/summary", guarded(summary)),
        Route("/p/{project}/image", guarded(image)),
        Route("/p/{project}/progress", guarded(progress)),
        Route("/p/{project}/next", guarded(next_item), methods=["POST"]),
        Route("/p/{project}/renew", guarded(renew), methods=["POST"]),
        Route("/p/{project}/answer", guarded(action(answer)), methods=["POST"]),
        Route("/p/{project}/skip", guarded(action(lambda p, who, b: p.skip(who, b.get("round"), b.get("key")))), methods=["POST"]),
        Route("/p/{project}/undo", guarded(action(undo)), methods=["POST"]),
        Route("/p/{project}/round", guarded(start_round), methods=["POST"]),
        Route("/", guarded(forbidden)),
        Mount("/static", app=StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        yield
        for project in pages:  # stopped (Ctrl-C): the items on its pages go back to the prompt and other servers
            for grant in (g for g in config.grants if g.project == project):
                with contextlib.suppress(StoreError):  # a database away: the leases run out by themselves
                    await run_in_threadpool(store.release_leases, project, grant.labeller)
        store.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.store, app.state.keys = store, keys
    return SecurityHeaders(app)


class SecurityHeaders:
    """ASGI middleware: `SECURITY_HEADERS` on every HTTP response, static files included."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.state = app.state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], *((k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items())]
            await send(message)

        await self.app(scope, receive, send_with_headers)

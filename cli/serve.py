"""`activebayes serve`: the labelling page in the browser, for one or several labellers at once.

    activebayes serve --labeller alice --labeller bob     # one URL each, with a secret token

It serves the project (--project, or the only one) at http://127.0.0.1:8000 until Ctrl-C, over
the same database as the other commands: the page shows the waiting round's queries in rank
order, commits each answer in its own transaction as `activebayes label` does, and, once every
query has its answer, runs the next round in the background. The round is `activebayes round`
itself, run as a child process with the options of the project's latest round (posterior,
acquisition, model, k and its --option values) or with --round-args; it holds the round lock,
so a `round` started meanwhile in a terminal is refused in one line, and one running there is
reported on the page in one line.

The page hides the round's prediction for each item unless --show-model-guess: the round asks
about the items its model is unsure or wrong about, and a labeller shown its guess leans towards
it. The prediction is recorded all the same (the store, the round file, `export`).

Security: it listens on 127.0.0.1 only unless --host says otherwise; tokens are new at every
start; see `activebayes.web` for the rest. Needs the `serve` extra (starlette, uvicorn, jinja2).
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Callable
from typing import Annotated, Any, Optional
from urllib.parse import quote

import typer

from activebayes_cli._app import CliError, command_group
from activebayes_cli._context import state
from activebayes_cli._options import show_model_guess

app = command_group()
ShowModelGuess = show_model_guess("on the labelling page")

NEEDS = ("starlette", "uvicorn", "jinja2")
INSTALL = "install them with pip install 'activebayes[serve]'"


class RoundFailed(Exception):
    """The round the page asked for did not run; its text is the CLI's one-line error."""


def _check_installed() -> None:
    import importlib.util

    missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        raise CliError(f"`activebayes serve` needs {', '.join(missing)}, which are not installed", INSTALL)


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to (host, port), before anything is printed: a busy port is one line."""
    if not 0 <= port <= 65535:
        raise CliError(f"--port: expected 0 to 65535, got {port}", "pass e.g. --port 8000")
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as exc:
        raise CliError(f"--host: cannot resolve {host!r} ({exc.strerror})", "pass an address such as 127.0.0.1") from exc
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CliError(f"--port: cannot listen on {host}:{port} ({exc.strerror})", "choose another --port, or stop the program using it") from exc
    sock.listen(128)  # connections made as soon as the URLs are printed wait for the server
    return sock


def round_arguments(store: Any, project: str) -> list[str]:
    """The `activebayes round` options of `project`'s latest round (none before its first),
    --cover-classes among them when that round's loop covered the classes, and the first round's
    --first (which goes on choosing early rounds' batches under `auto`)."""
    latest = store.latest_round(project)
    if latest is None:
        return []
    first = (store.rounds(project)[0].acquisition_settings or {}).get("first")
    k = len(store.queries(project, latest.number))
    args = ["--posterior", latest.posterior, "--acquisition", latest.acquisition] + (["--k", str(k)] if k else [])
    settings = latest.posterior_settings or {}
    if settings.get("model") and latest.posterior != "gp":
        args += ["--model", str(settings["model"])]
    for key, value in (settings.get("options") or {}).items():
        args += ["--option", f"{key}={json.dumps(value)}"]
    return args + (["--first", first] if first else []) + (["--cover-classes"] if (latest.acquisition_settings or {}).get("cover_classes") else [])


def round_runner(db: str, arguments: Callable[[str], list[str]]) -> Callable[[str], None]:
    """The page's round: `activebayes round` in a child process; RoundFailed with its one line."""

    def run(project: str) -> None:
        command = [sys.executable, "-m", "activebayes_cli.main", "--db", db, "--project", project, "--json", "round", *arguments(project)]
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        if done.returncode == 0:
            return
        lines = done.stderr.strip().splitlines() or [f"`activebayes round` exited with code {done.returncode}"]
        try:
            message = json.loads(lines[-1])["error"]
        except (ValueError, KeyError, TypeError):
            message = lines[-1]
        raise RoundFailed(message)

    return run


@app.command("serve", short_help="Serve the labelling page in the browser.")
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option("--host", help="Address to listen on; 0.0.0.0 opens the page to other machines.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on (0: any free port).")] = 8000,
    labellers: Annotated[Optional[list[str]], typer.Option("--labeller", metavar="<str>", help="A labeller's name, repeatable: one URL (and token) each; default $USER.", show_default=False)] = None,
    answers_per_item: Annotated[int, typer.Option("--answers-per-item", help="How many labellers answer each query (1: each item is shown to one labeller at a time).")] = 1,
    lease_seconds: Annotated[float, typer.Option("--lease-seconds", help="How long an item shown to one labeller is kept from the others (renewed while shown).")] = 120.0,
    round_args: Annotated[Optional[str], typer.Option("--round-args", help="Options of the rounds run from the page, e.g. \"--k 20 --acquisition bald\" (default: the latest round's).", show_default=False)] = None,
    show_model_guess: ShowModelGuess = False,
) -> None:
    """Serve the labelling page: one URL per labeller, answers recorded as they are given."""
    _check_installed()
    st = state(ctx)
    names = list(dict.fromkeys(labellers or [os.environ.get("USER") or os.environ.get("USERNAME") or "labeller"]))
    for name in names:
        if not name.strip() or len(name) > 200:
            raise CliError(f"--labeller: expected a name of 1 to 200 characters, got {name!r}", "pass e.g. --labeller alice")
    if answers_per_item < 1:
        raise CliError(f"--answers-per-item: expected at least 1, got {answers_per_item}", "pass 1 (the default) or 2")
    if not lease_seconds > 0:
        raise CliError(f"--lease-seconds: expected a positive number, got {lease_seconds}", "pass e.g. --lease-seconds 120")
    extra = shlex.split(round_args) if round_args is not None else None
    store = st.store(upgrade=True)  # the page writes answers: an older schema is upgraded first
    project = st.project_name()
    info = store.project(project)
    if info.task not in ("classification", "regression"):
        raise CliError(f"project {project!r} is a {info.task} project", "the labelling page serves classification and regression projects")
    if info.data_path is None:
        raise CliError(f"project {project!r} has no data yet", "add a pool first with `activebayes pool add FILE`")
    from activebayes.data import load_project_data

    load_project_data(store, project)  # a changed or missing data file: one line now, not on the page
    from activebayes.web import Grant, ServeConfig, create_app

    grants = tuple(Grant.new(name, project) for name in names)
    runner = round_runner(st.db, (lambda _: extra) if extra is not None else (lambda p: round_arguments(store, p)))
    config = ServeConfig(st.db, grants, answers_per_item=answers_per_item, lease_seconds=lease_seconds, run_round=runner,
                         show_model_guess=show_model_guess)  # fmt: skip
    sock = _listen(host, port)
    bound = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    urls = {g.labeller: f"http://{shown_host}:{bound}/p/{quote(project, safe='')}/label?token={g.token}" for g in grants}

    def render(console: Any) -> None:
        console.print(f"Labelling page of project {project!r}; one URL per labeller (each holds a secret token):")
        for name, url in urls.items():
            console.print(f"  {name}: {url}", soft_wrap=True)
        if host not in ("127.0.0.1", "localhost", "::1"):
            console.print(f"Listening on {host}: other machines can reach the page; anyone with a URL can label.")
        console.print("Ctrl-C stops the server; every answer acknowledged on a page is saved.")

    st.out.result({"project": project, "host": host, "port": bound, "urls": urls}, render)
    sys.stdout.flush()
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(create_app(config), log_level="warning", access_log=False, lifespan="on"))
    server.run(sockets=[sock])

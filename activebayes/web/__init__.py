"""The labelling page in the browser (`activebayes serve`): a small ASGI application over the same
store as the CLI. Needs the `serve` extra (starlette, uvicorn, jinja2).

    from activebayes.web import Grant, ServeConfig, create_app
    app = create_app(ServeConfig("sqlite:///study.db", grants=(Grant.new("ann", "digits"),)))

Security: each labeller's URL holds a secret token that opens only its project (no token, or
another project's: 403); state-changing requests are POSTs with a CSRF token; every item's text
is escaped by the templates; a request that fails a check writes nothing; every page forbids
loading anything but this server's own files. See `activebayes.web.access` and `.app`.
"""

from activebayes.web.access import AccessKeys, Grant
from activebayes.web.app import ServeConfig, create_app

__all__ = ["AccessKeys", "Grant", "ServeConfig", "create_app"]

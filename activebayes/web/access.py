"""Who may use the labelling page: one secret token per labeller and project, a CSRF token per
labeller token, and the response headers every page carries.

    grants = [Grant.new("alice", "digits"), Grant.new("bob", "digits")]
    keys = AccessKeys(grants)
    grant = keys.grant_for(token, project)      # None: answer 403
    keys.csrf_ok(grant, sent)                   # the POST's CSRF token

A token is `secrets.token_urlsafe(24)` (192 random bits), made anew each time `activebayes serve`
starts and printed in the labeller's URL. It opens the pages of its own project only. A
state-changing request is a POST whose JSON body carries the CSRF token, HMAC-SHA256 of the
labeller's token under a per-server secret: a page of another site can neither read it nor send
JSON without a CORS preflight, which this server never answers. Tokens are compared in constant
time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

# Every response: nothing but this server's own files may load (no asset from the internet, no
# inline script), the page may not be framed, and no URL (with its token) leaks as a referrer.
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


@dataclass(frozen=True)
class Grant:
    """`labeller` may label `project` with `token`."""

    labeller: str
    project: str
    token: str

    @staticmethod
    def new(labeller: str, project: str) -> Grant:
        return Grant(labeller, project, secrets.token_urlsafe(24))


class AccessKeys:
    """The grants of one server and its CSRF secret (random per server)."""

    def __init__(self, grants: Iterable[Grant], secret: bytes | None = None) -> None:
        self.grants = tuple(grants)
        self._secret = secret if secret is not None else secrets.token_bytes(32)

    def grant_for(self, token: str | None, project: str) -> Grant | None:
        """The grant whose token is `token` when it is for `project`; None otherwise (no token, an
        unknown one, or another project's)."""
        if not token:
            return None
        found = None
        for grant in self.grants:  # every grant compared, in constant time each
            if hmac.compare_digest(grant.token.encode(), token.encode()):
                found = grant
        return found if found is not None and found.project == project else None

    def csrf_token(self, grant: Grant) -> str:
        return hmac.new(self._secret, grant.token.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, grant: Grant, sent: object) -> bool:
        return isinstance(sent, str) and hmac.compare_digest(self.csrf_token(grant).encode(), sent.encode())

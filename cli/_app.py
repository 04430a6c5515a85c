"""The one place where errors become messages: every command runs inside `ActiveBayesGroup.main`.

A user's mistake (any `ActiveBayesError`, the CLI's own `CliError`, a usage error from the
option parser, a database that cannot be reached) prints ONE line to stderr,

    error: <what is wrong>; <how to fix>

and exits with code 2. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from typer import _click
from typer.exceptions import Abort
from typer.core import TyperGroup

from activebayes.errors import ActiveBayesError, ConfigError, DataError, ShapeError, StoreError

USER_ERROR = 2


class CliError(ActiveBayesError):
    """A mistake the CLI itself detects: `what` is wrong, `fix` says how to put it right."""

    def __init__(self, what: str, fix: str) -> None:
        super().__init__(f"{what}; {fix}")
        self.what = what
        self.fix = fix


# How to fix a library error whose message does not already say it (no "; " in it).
_GENERIC_FIX: dict[type, str] = {
    ConfigError: "see `activebayes COMMAND --help` for the accepted values",
    DataError: "correct the data or answers and run the command again",
    ShapeError: "check the shape of the data file",
    StoreError: "check --db and run `activebayes status`",
}


def format_error(exc: BaseException) -> str:
    """The single line printed for a user's mistake: 'error: <what>; <fix>'."""
    message = re.sub(r"\s*\(Background on this error at: [^)]*\)", "", str(exc))
    message = " ".join(message.split()) or type(exc).__name__
    if "; " not in message:
        fix = next((f for cls, f in _GENERIC_FIX.items() if isinstance(exc, cls)), "see `activebayes --help`")
        message = f"{message}; {fix}"
    return f"error: {message}"


def _database_error(exc: BaseException) -> str | None:
    """A one-line message for a database that cannot be reached, or None if `exc` is not one."""
    try:
        from sqlalchemy import exc as sa_exc
    except ImportError:  # pragma: no cover - sqlalchemy is a dependency
        return None
    if isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError)):
        cause = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return f"error: cannot use the database ({cause}); check --db / ACTIVEBAYES_DB and that the server is running"
    if isinstance(exc, (sa_exc.ArgumentError, sa_exc.NoSuchModuleError)):
        return f"error: --db is not a usable database URL ({exc}); use e.g. sqlite:///activebayes.db"
    return None


def _fail(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
    sys.exit(USER_ERROR)


class ActiveBayesGroup(TyperGroup):
    """The root command group: runs the command and turns user mistakes into one line and exit 2."""

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _click.exceptions.NoArgsIsHelpError as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except _click.exceptions.UsageError as exc:
            command = exc.ctx.command_path if exc.ctx is not None else "activebayes"
            _fail(f"error: {' '.join(exc.format_message().split())}; see `{command} --help`")
        except _click.exceptions.ClickException as exc:
            _fail(f"error: {' '.join(exc.format_message().split())}; see `activebayes --help`")
        except Abort:
            print("Aborted.", file=sys.stderr)
            sys.exit(1)
        except ActiveBayesError as exc:
            _fail(format_error(exc))
        except Exception as exc:
            line = _database_error(exc)
            if line is None:
                raise
            _fail(line)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)

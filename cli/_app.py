"""The one place where errors become messages: every command runs inside `ActiveBayesGroup.main`.

A user's mistake (any `ActiveBayesError`, the CLI's own `CliError`, a usage error from the
option parser, a database that cannot be reached) prints ONE line to stderr,

    error: <what is wrong>; <how to fix>

and exits with code 2 — or, under `--json`, one JSON object on stderr,

    {"error": "<what is wrong>; <how to fix>", "exit_code": 2}

Anything else is a bug and keeps its traceback. The fix names commands that work as typed: those
in backquotes repeat a `--db` typed on the command line (`CliState.as_typed`), a root option given
after the command is answered with the command line that has it first (`misplaced_root_option`),
a sub-command left out with the command line that has it (`missing_sub_command`: `pool iris.csv`
-> `pool add iris.csv`), so is a required option left out before its value
(`value_without_its_option`: `init iris` -> `init --name iris`), and a usage error points at the --help of the command it was made in
(`command_path`).

`ActiveBayesGroup` also makes the global flags `--json` and `--quiet`/`-q` work after the command
name (`activebayes status --json`, `activebayes pool add FILE --json`): before parsing, every
command and sub-command that does not define the flag itself gets a copy of the root option
(listed in its --help) whose callback switches the shared `Output` on. The option parser itself
then reads the flag, so an option's value is never mistaken for it. Flags show no `<bool>` type
in --help.

A Python warning raised while a command runs (a library's note, such as MC dropout's on a network
that is not an `nn.Sequential`) is printed as its text alone on one stderr line, without the
source file and line of the code that raised it.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
import shlex
import sys
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

import typer
from typer import Abort, TyperException
from typer.core import TyperGroup

from activebayes.errors import ActiveBayesError, ConfigError, DataError, ShapeError, StoreError

USER_ERROR = 2
INTERRUPTED = 130  # the shell's code for a process stopped by Ctrl-C (128 + SIGINT)


def command_group(**settings: Any) -> typer.Typer:
    """A Typer app of commands whose help texts are printed as written (rich_markup_mode=None):
    rich's markup would read `pip install 'activebayes[ray]'` as a style and drop `[ray]`, and
    its panels cut option names at 80 columns."""
    return typer.Typer(rich_markup_mode=None, **settings)


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


_LONG_WORD = re.compile(r"\S{%d,}" % 120)


def _shorten(message: str) -> str:
    """A message with every run of over 120 non-blank characters (a 10 MB cell echoed back) cut
    to its start and its length, so that the error line stays readable."""
    return _LONG_WORD.sub(lambda m: f"{m.group()[:60]}...({len(m.group())} characters)", message)


def format_error(exc: BaseException, command: str = "activebayes COMMAND") -> str:
    """The single line printed for a user's mistake: 'error: <what>; <fix>'; a generic fix names
    the `command` run ("activebayes round") where it says "see `activebayes COMMAND --help`"."""
    message = re.sub(r"\s*\(Background on this error at: [^)]*\)", "", str(exc))
    message = _shorten(" ".join(message.split())) or type(exc).__name__
    if "; " not in message:
        fix = next((f for cls, f in _GENERIC_FIX.items() if isinstance(exc, cls)), "see `activebayes --help`")
        message = f"{message}; {fix.replace('activebayes COMMAND', command)}"
    return f"error: {message}"


def _database_error(exc: BaseException) -> str | None:
    """A one-line message for a database that cannot be reached, or None if `exc` is not one."""
    try:
        from sqlalchemy import exc as sa_exc
    except ImportError:  # pragma: no cover - sqlalchemy is a dependency
        return None
    if isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError)):
        from activebayes.store.engine import database_cause

        return _shorten(f"error: cannot use the database ({database_cause(exc)}); check --db / ACTIVEBAYES_DB and that the server is running")
    if isinstance(exc, (sa_exc.ArgumentError, sa_exc.NoSuchModuleError)):
        return _shorten(f"error: --db is not a usable database URL ({' '.join(str(exc).split())}); use e.g. sqlite:///activebayes.db")
    return None


def command_path(group: Any, words: list[str]) -> str:
    """The command that `words` (the arguments after `activebayes`) call, e.g. "activebayes pool
    add" for ["--db", "x.db", "pool", "add", "f.csv", "--k"]: each word naming a sub-command of
    the command reached so far descends into it (an option or a value does not)."""
    path, command = ["activebayes"], group
    for word in words[: words.index("--")] if "--" in words else words:
        sub = getattr(command, "commands", {}).get(word)
        if sub is not None:
            path.append(word)
            command = sub
    return " ".join(path)


def misplaced_root_option(group: Any, exc: Any, words: list[str]) -> str | None:
    """The error line for a root option (--db, --project, --version) given after the command
    name, which only the root accepts (`activebayes status --db x.db`): the command line with the
    option moved before the command; None for any other usage error."""
    name = getattr(exc, "option_name", None)
    ctx = getattr(exc, "ctx", None)
    if type(exc).__name__ != "NoSuchOption" or ctx is None or ctx.parent is None:
        return None
    root = next((p for p in group.params if name in p.opts and name not in LATE_FLAGS), None)
    if root is None:
        return None
    rest = list(words)
    at = next((i for i, w in enumerate(rest) if w == name or w.startswith(f"{name}=")), None)
    if at is None:
        return None
    moved = [rest.pop(at)]
    if not root.is_flag and "=" not in moved[0] and at < len(rest):
        moved.append(rest.pop(at))
    fixed = shlex.join(["activebayes", *moved, *([] if root.is_eager else rest)])  # --version runs alone
    return f"error: {name} is an option of activebayes itself, not of `{ctx.command_path}`; give it before the command: `{fixed}`"


def missing_sub_command(group: Any, exc: Any, words: list[str]) -> str | None:
    """The error line for an unknown command that a sub-command was meant by: `activebayes pool
    iris.csv` or `pool ad` (a group of one command: `pool add`) or `activebayes add iris.csv` (the
    command of another group), with the command line as it should be; None for any other usage
    error."""
    ctx = getattr(exc, "ctx", None)
    found = re.match(r"No such command '(.+?)'", exc.format_message())
    if ctx is None or found is None or found[1] not in words:
        return None
    at, commands = words.index(found[1]), getattr(ctx.command, "commands", {})
    if len(commands) == 1:  # the word is a typo of the one command (replaced), or its argument
        typo = bool(difflib.get_close_matches(found[1], commands, cutoff=0.6))
        fixed = [*words[:at], *commands, *words[at + typo :]]
    else:
        owner = next((name for name, sub in commands.items() if found[1] in getattr(sub, "commands", {})), None)
        if owner is None:
            return None
        fixed = [*words[:at], owner, *words[at:]]
    return f"error: `{ctx.command_path}` has no command {found[1]!r}; did you mean `{shlex.join(['activebayes', *fixed])}`"


def value_without_its_option(exc: Any, words: list[str]) -> str | None:
    """The error line for a required option's value given bare to a command that takes no
    arguments (`activebayes init iris`): the command line with the option put before it
    (`activebayes init --name iris`); None for any other usage error."""
    ctx, param = getattr(exc, "ctx", None), getattr(exc, "param", None)
    if type(exc).__name__ != "MissingParameter" or ctx is None or not getattr(param, "opts", None):
        return None
    if any(type(p).__name__.endswith("Argument") for p in ctx.command.params):
        return None
    at = next((i + 1 for i, w in enumerate(words) if w == ctx.info_name), None)
    if at is None or at >= len(words) or words[at].startswith("-"):
        return None
    fixed = shlex.join(["activebayes", *words[:at], param.opts[0], *words[at:]])
    return f"error: `{ctx.command_path}` takes no argument {words[at]!r}; did you mean `{fixed}`"


def given_value(exc: BaseException, message: str) -> str:
    """", got 'abc'" for an option value Typer's validation (pydantic) refused without naming it
    in `message` (`--k abc`: "Input should be a valid integer, ..."); "" otherwise."""
    errors = getattr(exc.__cause__, "errors", None)
    try:
        given = [e["input"] for e in errors() if "input" in e] if callable(errors) else []
    except Exception:  # noqa: BLE001 - a cause of another shape: nothing to add
        return ""
    return f", got {given[0]!r}" if given and isinstance(given[0], str) and repr(given[0]) not in message else ""


def _warning_line(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
    """Show a Python warning as one line on stderr, its text alone: not the source file and line
    a library raised it at, which say nothing to a person running a command."""
    print(" ".join(str(message).split()), file=sys.stderr if file is None else file, flush=True)


def closest(name: str, choices: Iterable[str]) -> str | None:
    """The choice `name` was likely meant as, in any case ('irs' -> 'iris', 'CSV' -> 'csv'), or
    None where none is close."""
    from activebayes.errors import closest_name

    names = {str(c).lower(): str(c) for c in choices}
    close = closest_name(name.lower(), names)
    return names[close] if close is not None else None


def close_choice(message: str) -> str:
    """" (did you mean 'typical'?)" for a value a choice option refused ("Invalid value for
    '--first': 'typcial' is not one of 'auto', 'typical', 'random'"), the closest of its choices;
    "" where none is close or `message` is no such refusal."""
    found = re.search(r": '(.+?)' is not one of ('.*')$", message)
    meant = closest(found[1], re.findall(r"'([^']*)'", found[2])) if found is not None else None
    return f" (did you mean {meant!r}?)" if meant is not None else ""


def _fail(line: str, as_json: bool = False) -> None:
    """Print the error line (or, under --json, {"error": ..., "exit_code": 2}) and exit 2."""
    if as_json:
        line = json.dumps({"error": line.removeprefix("error: "), "exit_code": USER_ERROR})
    print(line, file=sys.stderr, flush=True)
    sys.exit(USER_ERROR)


# Root options that are also accepted after the command name: option -> `Output` attribute.
LATE_FLAGS = {"--json": "json", "--quiet": "quiet"}


def _commands(group: Any) -> Iterator[Any]:
    """Every command and sub-group below `group`, depth first."""
    for command in getattr(group, "commands", {}).values():
        yield command
        yield from _commands(command)


def _untyped_flag(param: Any) -> Any:
    if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
        param.metavar = ""  # Typer's rich help would print the flag's type as `<bool>`
    return param


def _hide_flag_types(command: Any) -> None:
    """No `<bool>` after a flag in the --help of `command` (its --help option included)."""
    for param in command.params:
        _untyped_flag(param)
    get_help_option = command.get_help_option
    command.get_help_option = lambda ctx: _untyped_flag(get_help_option(ctx))


def _set_late_flag(ctx: Any, param: Any, value: Any) -> None:
    if value:  # the flag was given after the command: switch the shared Output on
        out = getattr(ctx.find_root().obj, "out", None)
        if out is not None:
            setattr(out, param.activebayes_flag, True)


def _wants_json(args: list[str], obj: Any) -> bool:
    """Whether errors are JSON: --json was parsed (the Output says so) or, when parsing failed
    before reaching it, appears among the arguments (before a `--`)."""
    if getattr(getattr(obj, "out", None), "json", False):
        return True
    words = args[: args.index("--")] if "--" in args else args
    return any(w == "--json" or w.startswith("--json=") for w in words)


class ActiveBayesGroup(TyperGroup):
    """The root command group: runs the command and turns user mistakes into one line and exit 2."""

    _root_ctx: Any = None

    def install_late_flags(self) -> None:
        """Give every command without its own --json / --quiet a copy of the root option, and
        show flags without a `<bool>` type in --help (see the module docstring)."""
        roots = {opt: p for p in self.params for opt in p.opts if opt in LATE_FLAGS}
        _hide_flag_types(self)
        for command in _commands(self):
            _hide_flag_types(command)
            taken = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
            for flag, attribute in LATE_FLAGS.items():
                root = roots.get(flag)
                if root is None or flag in taken:
                    continue
                late = copy.copy(root)
                late.opts = [opt for opt in root.opts if opt not in taken]
                late.secondary_opts = []
                late.name = f"activebayes_late_{attribute}"
                late.expose_value = False
                late.is_eager = False
                late.envvar = None
                late.callback = _set_late_flag
                late.activebayes_flag = attribute
                command.params.append(late)

    def make_context(self, info_name: Any, args: Any, parent: Any = None, **extra: Any) -> Any:
        ctx = super().make_context(info_name, args, parent, **extra)
        self._root_ctx = ctx  # to read --json back when an error is reported
        return ctx

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        self.install_late_flags()
        words = [str(a) for a in (sys.argv[1:] if args is None else args)]

        def fail(line: str) -> None:
            _fail(line, _wants_json(words, getattr(self._root_ctx, "obj", None)))

        try:
            with warnings.catch_warnings():  # a library's warning reaches a person as one plain line
                warnings.showwarning = _warning_line
                for developers_only in (DeprecationWarning, PendingDeprecationWarning):  # a library's word to its callers' code
                    warnings.filterwarnings("ignore", category=developers_only)
                rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except TyperException as exc:  # the option parser's errors (Typer's public base class)
            if type(exc).__name__ == "NoArgsIsHelpError":  # as Typer tells it, without importing it
                exc.show()  # type: ignore[attr-defined]
                sys.exit(exc.exit_code)
            for rewrite in (misplaced_root_option(self, exc, words), missing_sub_command(self, exc, words), value_without_its_option(exc, words)):
                if rewrite is not None:  # the command line as it should be
                    fail(rewrite)
            message = " ".join(exc.format_message().split()).rstrip(".").replace("Value error, ", "")  # Typer's pydantic wording
            message += given_value(exc, message) + close_choice(message)
            if hasattr(exc, "ctx"):  # a usage error: point at the command's own --help
                ctx = exc.ctx
                fail(f"error: {message}; see `{ctx.command_path if ctx is not None else command_path(self, words)} --help`")
            fail(f"error: {message}; see `activebayes --help`")
        except Abort:
            print("Aborted.", file=sys.stderr)
            sys.exit(1)
        except ActiveBayesError as exc:
            path = command_path(self, words)
            line, cli = format_error(exc, path if path != "activebayes" else "activebayes COMMAND"), getattr(self._root_ctx, "obj", None)
            fail(cli.as_typed(line) if cli is not None else line)
        except Exception as exc:
            line = _database_error(exc)
            if line is None:
                raise
            fail(line)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)

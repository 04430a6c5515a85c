"""What each labeller of the page sees next, and their answers, skips and undos.

`Labelling` is the page's thin state over the store. Everything that must survive the server
lives in the database: answers (observations, `who` = the labeller, source "web") and leases
(`item_leases`). Only the skips and the undo stack of each labeller live in memory, for the
server's lifetime, as the terminal prompt keeps them for its session.

The queue of labeller L is the waiting round's queries in rank order that are open to L:

* one answer per item (`answers_per_item=1`, the default): the queries without a label;
* `answers_per_item=n`: the queries that L has not answered in this round and that fewer than
  n labellers have. An item's label is still its latest observation, so with two answers the
  second one is the label the next round fits; the status page lists the items whose answers
  disagree, to settle them with `activebayes label --from FILE --relabel`.

Of that queue, L is shown the first item that fewer than `answers_per_item` other labellers hold
a lease on (`PoolStore.lease_item`, `lease_seconds` long, renewed on each view). Skipped items
are left out until L asks for them again.

Every answer is one transaction through `PoolStore.record_labels`, the function the terminal
prompt uses, checked against the label the item had when it was shown (none): an identical
answer that another labeller committed meanwhile is a repeat and records nothing; a different
one stays, and this answer is refused (`--relabel` is for files). With several answers per item
each labeller's answer is their own: it is recorded unless the same labeller gave it already.
A regression answer is read as the project writes its numbers, as at the prompt
(`activebayes.data.number_style.answer_number`: `151,5` and `151.5` alike; `12.5 kg` where the
pool wrote its target with that unit). The number field asks a phone for its decimal keypad
until a label of the project (recorded before the server started, or saved on the page since) is
negative, then for the full keyboard (`activebayes.web.question.keypad`).

The page names an item by its key, except in an image pool: there keys are file paths, which
often spell the class (`cat/01.png` of `pool add --labels-from-folders`, `dog.12.jpg`), so the
page never sees them. It names the item "query R" (R its rank in the round, from 1) in the card,
the image's URL, the requests that answer it and every message (`Labelling.name`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from activebayes.data.number_style import AnswerError, answer_number, project_unit, project_writing
from activebayes.errors import DataError, StoreError
from activebayes.web.items import ItemView, is_image_pool, item_view, text_columns
from activebayes.web.question import keypad, negative

SOURCE = "web"


class BadAnswer(ValueError):
    """A request the page refuses without writing anything (an unknown key, a round that no
    longer waits, a label outside the classes); `str()` says which."""


class RoundGone(BadAnswer):
    """An answer or skip for a round that no longer waits (a round run in a terminal, `round
    --restart-round`, or the page's own button meanwhile): nothing written; the page shows what
    is open now."""


@dataclass(frozen=True)
class Card:
    """What labeller sees next. `query` None: nothing to show now; then `open` says how many
    items stay open to them, `held` how many of those other labellers hold, `skipped` how many
    they skipped."""

    round: int | None
    query: Any = None
    name: str | None = None  # what the page calls the query (`Labelling.name`)
    view: ItemView | None = None
    open: int = 0
    held: int = 0
    skipped: int = 0
    unlabelled: int = 0  # the round's queries without any label (0: the round can close)
    asked: int = 0  # how many queries the round asked
    wanting: int = 0  # the round's queries with fewer answers than `answers_per_item` (unlabelled ones among them)


@dataclass(frozen=True)
class Outcome:
    """What became of an action: `status` "saved" | "repeat" | "refused" | "undone" | "nothing";
    `key` the item's name on the page (`Labelling.name`); `value` the label as the store keeps it
    (a regression answer "1e3" or " 3,5 " is "1000.0" or "3.5")."""

    status: str
    key: str | None = None
    value: str | None = None
    message: str = ""


class _Openness(NamedTuple):
    """The queries of a round open to one labeller (`queue`, in rank order); how many have no
    label, how many the round asked, and how many have fewer answers than `answers_per_item`."""

    queue: list[Any]
    unlabelled: int
    asked: int
    wanting: int


@dataclass
class _Labeller:
    undo: list[tuple[int, str, int | None]] = field(default_factory=list)  # (round, name, observation id or None)
    skipped: dict[int, set[str]] = field(default_factory=dict)  # round -> keys


class Labelling:
    """The labelling page's state for one project (see the module docstring)."""

    def __init__(self, store: Any, project: str, data: Any, *, answers_per_item: int = 1, lease_seconds: float = 120.0,
                 labellers: dict[str, Any] | None = None) -> None:  # fmt: skip
        if answers_per_item < 1:
            raise DataError(f"answers_per_item: expected at least 1, got {answers_per_item}")
        self.store, self.project, self.data = store, project, data
        self.info = store.project(project)
        self.answers_per_item = answers_per_item
        self.lease_seconds = float(lease_seconds)
        self._texts = text_columns(self.info.settings)
        self.writing = project_writing(self.info.settings)  # decimal commas where the pool had them
        self.unit = project_unit(self.info.settings)  # "kg" where the pool's target was written "70 kg"
        regression = self.info.task == "regression"  # the number field's inputmode: "text" once a label is negative
        self.keypad = keypad(o["value"] for o in store.observations(project)) if regression else None
        self.hides_keys = is_image_pool(data)  # file paths that may spell the class
        self.labellers: dict[str, _Labeller] = labellers if labellers is not None else {}  # each one's undo list and skips
        self._asked_round: tuple[int, dict[str, Any]] | None = None
        self._lock = threading.Lock()

    def _state(self, labeller: str) -> _Labeller:
        with self._lock:
            return self._state_unlocked(labeller)

    def _state_unlocked(self, labeller: str) -> _Labeller:
        return self.labellers.setdefault(labeller, _Labeller())

    def name(self, query: Any) -> str:
        """What the page calls `query`: its key, or "query R" (its rank from 1) in an image pool."""
        return f"query {query.rank + 1}" if self.hides_keys else query.key

    def waiting_round(self) -> int | None:
        latest = self.store.latest_round(self.project)
        return latest.number if latest is not None and latest.status.waiting else None

    def _open(self, labeller: str, number: int) -> _Openness:
        """The round's queries open to `labeller` and its counts (`_Openness`)."""
        queries = self.store.queries(self.project, number)
        unlabelled = sum(q.value is None for q in queries)
        wanting, whos = self._wanting(number, queries)
        queue = [q for q in wanting if labeller not in whos.get(q.key, ())]
        return _Openness(queue, unlabelled, len(queries), len(wanting))

    def _wanting(self, number: int, queries: list[Any]) -> tuple[list[Any], dict[str, set[str]]]:
        """The queries of round `number` with fewer answers than `answers_per_item` (with one
        answer per item: those without a label), and {key: who answered it} (empty with one)."""
        if self.answers_per_item == 1:
            return [q for q in queries if q.value is None], {}
        whos = {key: {who for who, _ in given} for key, given in self.store.round_answers(self.project, number).items()}
        return [q for q in queries if len(whos.get(q.key, ())) < self.answers_per_item], whos

    def still_wanting(self, number: int) -> int:
        """How many queries of round `number` wait for an answer, their first or, with several
        answers per item, a further one: the next round run now goes without those. The
        labelling page's card (`Card.wanting`) and the status page count them so."""
        return len(self._wanting(number, self.store.queries(self.project, number))[0])

    def next_card(self, labeller: str, prefer: str | None = None) -> Card:
        """The first open item that is not held by others, leased to `labeller` (their lease on
        any other item ends); `prefer` (a name) goes first when it is open (an undone answer)."""
        number = self.waiting_round()
        if number is None:
            self.store.release_leases(self.project, labeller)
            return Card(None)
        found = self._open(labeller, number)
        queue, counts = found.queue, {"unlabelled": found.unlabelled, "asked": found.asked, "wanting": found.wanting}
        skipped = self._state(labeller).skipped.get(number, set())
        wanted = [q for q in queue if q.key not in skipped or self.name(q) == prefer]
        wanted.sort(key=lambda q: self.name(q) != prefer)  # stable: rank order otherwise
        held = self.store.lease_item(self.project, labeller, [q.item_id for q in wanted], seconds=self.lease_seconds,
                                     holders=self.answers_per_item, round_number=number)  # fmt: skip
        shown_skips = sum(q.key in skipped for q in queue)
        if held is None:
            return Card(number, open=len(queue), held=len(wanted), skipped=shown_skips, **counts)
        query = next(q for q in wanted if q.item_id == held)
        view = item_view(self.data, query.row, self._texts)
        return Card(number, query, self.name(query), view, open=len(queue), held=0, skipped=shown_skips, **counts)

    def _query(self, number: Any, key: Any) -> Any:
        """The query named `key` (`name`) of round `number`, which must be the waiting round;
        BadAnswer otherwise."""
        waiting = self.waiting_round()
        if not isinstance(number, int) or isinstance(number, bool) or number != waiting:
            stale = isinstance(number, int) and not isinstance(number, bool) and (waiting is None or number < waiting)  # an earlier round: the page moves on
            raise (RoundGone if stale else BadAnswer)(f"round {number!r} does not wait for answers" + (f" (round {waiting} does)" if waiting else ""))
        found = self._asked(number).get(key) if isinstance(key, str) else None
        if found is None:
            raise BadAnswer(f"round {number} has no query {key!r}")
        return found

    def _asked(self, number: int) -> dict[str, Any]:
        """{name: query} of round `number` (what it asked never changes: read once per round; the
        answers in these records are those of that moment)."""
        with self._lock:
            if self._asked_round is not None and self._asked_round[0] == number:
                return self._asked_round[1]
        asked = {self.name(q): q for q in self.store.queries(self.project, number)}
        with self._lock:
            self._asked_round = (number, asked)
        return asked

    def waiting_query(self, number: str, key: str | None) -> Any:
        """The waiting round's query named `key` when `number` (text) is that round, else None."""
        waiting = self.waiting_round()
        if waiting is None or number != str(waiting):
            return None
        return self._asked(waiting).get(key) if isinstance(key, str) else None

    def renew(self, labeller: str, number: Any, key: Any) -> bool:
        """Extend `labeller`'s lease on query `key` of round `number` while it is open to them;
        False when it no longer is (answered, or the round closed) or others hold it."""
        try:
            query = self._query(number, key)
        except BadAnswer:
            return False
        queue = self._open(labeller, number).queue
        if all(q.key != query.key for q in queue):
            return False
        return self.store.lease_item(self.project, labeller, [query.item_id], seconds=self.lease_seconds,
                                     holders=self.answers_per_item, round_number=number) is not None  # fmt: skip

    def answer(self, labeller: str, number: Any, key: Any, value: Any) -> Outcome:
        """Commit `labeller`'s answer `value` to query `key` of round `number` (one transaction)."""
        query = self._query(number, key)
        name = self.name(query)
        several = self.answers_per_item > 1
        stored = value
        if self.info.task == "regression":
            try:
                stored = repr(answer_number(value, self.writing, self.unit))
            except AnswerError as exc:
                raise BadAnswer(f"{str(value).strip()!r} {exc}") from None
        try:
            ids, conflicts = self.store.record_labels(
                self.project, [(query.key, stored, number)], who=labeller, source=SOURCE, expected={query.key: None},
                relabel=several, per_labeller=several,
            )  # fmt: skip
        except DataError as exc:
            raise BadAnswer(str(exc)) from exc
        if conflicts:
            now = conflicts[query.key][1]
            given = self.store.round_answers(self.project, number).get(query.key, [])
            by = "you, in another tab or window," if given and given[-1][0] == labeller else "someone else"
            return Outcome("refused", name, None, f"{name} was labelled {now!r} by {by} meanwhile; that label stays")
        observation = ids[0]  # None: a repeat, nothing written
        with self._lock:
            self.labellers.setdefault(labeller, _Labeller()).undo.append((number, name, observation))
        if negative(stored):
            self.keypad = "text"  # negative answers happen: the keyboard with a minus sign from now on
        if observation is None:
            current = self.store.label_states(self.project, [query.key])[query.key]["label"]
            return Outcome("repeat", name, current, f"{name}: {current!r} was already its label; recorded once")
        return Outcome("saved", name, str(stored).strip(), f"saved {name}")  # as the store keeps it: 1e3 is 1000.0

    def skip(self, labeller: str, number: Any, key: Any) -> Outcome:
        query = self._query(number, key)
        with self._lock:
            self.labellers.setdefault(labeller, _Labeller()).skipped.setdefault(number, set()).add(query.key)
        return Outcome("nothing", self.name(query), message=f"skipped {self.name(query)}")

    def unskip(self, labeller: str) -> None:
        with self._lock:
            self.labellers.setdefault(labeller, _Labeller()).skipped.clear()

    def given(self, labeller: str) -> list[tuple[str, str]]:
        """(name, value) of `labeller`'s answers of the waiting round that the page can still take
        back, oldest first: a reloaded page (or one come back to) lists them again, each with its
        change button."""
        number = self.waiting_round()
        with self._lock:
            names = [name for rnd, name, observation in self._state_unlocked(labeller).undo if rnd == number and observation is not None]
        if not names:
            return []
        answers, asked = self.store.round_answers(self.project, number), self._asked(number)
        mine = {name: [v for who, v in answers.get(asked[name].key, []) if who == labeller] for name in names}
        return [(name, mine[name][-1]) for name in names if mine[name]]

    def undo(self, labeller: str, name: str | None = None) -> Outcome:
        """Take back `labeller`'s last answer of the waiting round, or with `name` their answer to
        that item (the page's "change" beside an earlier answer), by `PoolStore.retract_observation`:
        the same store rule as the prompt's `u`, for any answer this page recorded in the round."""
        number = self.waiting_round()
        with self._lock:
            stack = self.labellers.setdefault(labeller, _Labeller()).undo
            closed = max((entry[0] for entry in stack if entry[0] != number), default=None)  # answers of a closed round stay
            stack[:] = [entry for entry in stack if entry[0] == number]
            found = [i for i, entry in enumerate(stack) if name is None or entry[1] == name]
            if not found:
                if closed is not None:
                    return Outcome("nothing", name, message=f"round {closed} has closed: its answers can no longer be taken back")
                return Outcome("nothing", name, message="nothing to undo" if name is None else f"no answer of yours to {name} to take back")
            _, key, observation_id = stack.pop(found[-1])
        if observation_id is None:
            return Outcome("nothing", key, message=f"{key}: that answer repeated its label and recorded nothing; nothing to undo")
        try:
            self.store.retract_observation(self.project, observation_id)
        except StoreError:  # its round closed, or it was taken back, meanwhile (the store's text names the key)
            return Outcome("refused", key, message=f"the answer for {key} can no longer be taken back: its round closed meanwhile")
        return Outcome("undone", key, message=f"took back the answer for {key}")

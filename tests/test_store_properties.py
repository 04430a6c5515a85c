"""A stateful property test of `PoolStore` (hypothesis): random sequences of its public writes —
create/delete a project, add items in batches, record labels (`record_observations`,
`record_answers`, the checked `record_labels`, relabelling, `retract_observation`), start, advance,
query and finish rounds, hold the round lock — run against a small in-memory model of what the
store must hold, on SQLite and on PostgreSQL (one store per test, its tables emptied per example).

Invariants, checked after every step through the public reads (and plain SQL for the rows):
  * the projects, their items (key, row, split, consumable) and their observations (in order: key,
    value, who, source, round) are the model's; an item's label is its latest observation;
  * per split, labelled + unlabelled == items, `labels` lists exactly the labelled items (in item
    order), and `count_labelled` counts them; the candidates are the pool's unlabelled consumable
    items and every reusable one; `label_states` agrees, and leaves unknown keys out;
  * the rounds (number, status, labelled count at start, failure reason) are the model's, at most
    one of a project is unfinished, and `latest_round` is the last;
  * each round's queries are the model's (key, score, rank 0..n-1, answer), an item is queried at
    most once per round, every query belongs to an existing round and to an item of the round's
    project, and an observation's round is one of its item's project; `scored_rounds` are the
    rounds that stored every candidate's score; no round lock is left behind;
  * a refused operation (StoreError or DataError, or a `record_labels` conflict) leaves every
    table exactly as it was.
"""

from __future__ import annotations

import math
import os
from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test  # noqa: E402
from sqlalchemy import text  # noqa: E402

from activebayes.errors import DataError, RoundBusyError, StoreError  # noqa: E402
from activebayes.store import PoolStore  # noqa: E402
from store_model import (  # noqa: E402
    ALLOWED, BUSY, CLASSES, FAULTS, KEYS, LABELS, MISSING_ITEM_ID, NAMES, NEXT, SCORES, STATUSES, TABLES, UNKNOWN, WHO, Obs, ProjectM, RoundM,
)

# Not shrunk: every step costs tens of queries, and shrinking a failure ran past pytest's timeout
# (300 s) before printing anything; the failing program is printed as found. PostgreSQL's round
# trips make a step ~3x dearer than SQLite's: it runs the first half of the examples.
settings.register_profile(
    "activebayes-store", max_examples=12, stateful_step_count=30, deadline=None, derandomize=True, database=None,
    phases=[Phase.explicit, Phase.generate], suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip
PROFILE = settings.get_profile("activebayes-store")
PG_PROFILE = settings(PROFILE, max_examples=PROFILE.max_examples // 2)

names, busy_names = st.sampled_from(NAMES), st.sampled_from(BUSY)


class StoreMachine(RuleBasedStateMachine):
    """`store` (emptied here) against `ProjectM`s; `other` is a second PoolStore on the same
    database, which must find a held round lock busy."""

    def __init__(self, store: PoolStore, other: PoolStore) -> None:
        super().__init__()
        self.store, self.other = store, other
        with store.transaction() as s:
            for table in TABLES:
                s.execute(text(f"DELETE FROM {table}"))
        self.model: dict[str, ProjectM] = {}
        self._rows = self._dump()  # every row, as the last invariant check (or this) found them
        self._refusal = False  # the last step was refused: no row may have changed
        self._verified: dict[str, str] = {}  # project -> repr of its model when its reads were last checked

    # ---- helpers ----------------------------------------------------------------------------
    def _dump(self) -> dict[str, list[dict[str, Any]]]:
        """Every row of every table (each column, timestamps included), by primary key."""
        with self.store.transaction(write=False) as s:
            return {t: [dict(r) for r in s.execute(text(f"SELECT * FROM {t} ORDER BY 1")).mappings()] for t in TABLES}

    def _refused(self, error: type[Exception], call: Any) -> None:
        """`call()` raises `error`; the invariant check after this step finds every row as it was."""
        with pytest.raises(error):
            call()
        self._refusal = True

    def _keys(self, project: ProjectM | None, *, unique: bool = False, min_size: int = 0) -> list[str]:
        """`min_size` to 3 keys of `project`'s items (distinct when `unique`), now and then with
        the unknown key or the first key again appended."""
        known = list(project.items) if project is not None and project.items else list(KEYS)
        size = self.rng.randint(min(min_size, len(known)), 3)
        chosen = self.rng.sample(known, min(size, len(known))) if unique else [self.rng.choice(known) for _ in range(size)]
        fault = self.rng.choice(FAULTS)
        if fault == "unknown" or (fault == "repeat" and chosen):
            chosen.append(UNKNOWN if fault == "unknown" else chosen[0])
        return chosen

    def _number(self, project: ProjectM | None) -> int:
        """A round number: the latest round's mostly, any of 1..4 otherwise."""
        latest = [len(project.rounds)] * 8 if project is not None and project.rounds else []
        return self.rng.choice(latest + [1, 2, 3, 4])

    def _label(self, *, maybe: bool = False) -> tuple[Any, str | None] | None:
        """One of LABELS, or (when `maybe`, 1 in 4) None: an answer skipped."""
        return None if maybe and self.rng.random() < 0.25 else self.rng.choice(LABELS)

    def _item_ids(self, name: str, item_keys: list[str]) -> list[int]:
        """The store's ids of `item_keys` of project `name`; MISSING_ITEM_ID for an unknown key."""
        states = self.store.label_states(name, item_keys)
        return [states[k]["item_id"] if k in states else MISSING_ITEM_ID for k in item_keys]

    @staticmethod
    def _bad_answers(project: ProjectM, pairs: list[tuple[str, tuple[Any, str | None]]]) -> bool:
        """Whether `record_observations` refuses `pairs` (key, (given, text)) with a DataError: a
        label outside the classes, a key given two labels, an unknown key."""
        seen: dict[str, str | None] = {}
        for key, (_, stored) in pairs:
            if stored is None or seen.get(key, stored) != stored:
                return True
            seen[key] = stored
        return any(k not in project.items for k in seen)

    # ---- projects and items -----------------------------------------------------------------
    @initialize(rows=st.lists(st.integers(0, len(KEYS) - 1), min_size=1, max_size=4, unique=True),
                consumable=st.booleans(), rng=st.randoms(use_true_random=True))  # fmt: skip
    def first_project(self, rows, consumable, rng):
        """Project "p" with a few pool items, so that most steps have something to work on; `rng`
        (seeded by hypothesis, so derandomized too) makes the steps' values: hypothesis's own
        draws start from the simplest values, and this test runs too few examples to leave them."""
        self.rng = rng
        self.create_project("p")
        self._add(self.model["p"], "p", rows, None, "pool", consumable)

    @rule(name=names, classes=st.sampled_from((range(3), [0, 1, 2], CLASSES)),
          settings=st.sampled_from(({}, {"note": "é", "label_column": None})))  # fmt: skip
    def create_project(self, name, classes=CLASSES, settings=None):
        """A new project (its classes stored as text however given, its settings as given);
        refused for a name taken."""
        call = lambda: self.store.create_project(name, classes=classes, settings=settings)  # noqa: E731
        if name in self.model:
            self._refused(StoreError, call)
            return
        info = call()
        assert (info.name, info.classes, info.settings) == (name, CLASSES, settings or {})
        self.model[name] = ProjectM(settings or {})

    @rule(name=st.sampled_from(("q", "q", "q", "p")), recreate=st.booleans())
    def delete_project(self, name, recreate):
        """(Mostly "q": "p" keeps its history.) Deleting a project deletes its items, rounds, queries and observations (no row of
        theirs is left: see `rows_reference_their_own_project`); one made again under its name
        starts empty."""
        if name not in self.model:
            self._refused(StoreError, lambda: self.store.delete_project(name))
            return
        self.store.delete_project(name)
        del self.model[name]
        if recreate:
            self.create_project(name)

    @rule(name=busy_names, rows=st.lists(st.integers(0, len(KEYS) - 1), max_size=3), keyed=st.booleans(),
          split=st.sampled_from(("pool", "test")), consumable=st.booleans())  # fmt: skip
    def add_items(self, name, rows, keyed, split, consumable):
        """A batch of items (keyed, or keyed str(row)); a key clashing with an item or with another
        of the batch refuses it all."""
        item_keys = [self.rng.choice(KEYS) for _ in rows] if keyed else None
        self._add(self.model.get(name), name, rows, item_keys, split, consumable)

    def _add(self, project: ProjectM | None, name: str, rows: list[int], item_keys: list[str] | None, split: str,
             consumable: bool) -> None:  # fmt: skip
        new = item_keys if item_keys is not None else [str(r) for r in rows]
        call = lambda: self.store.add_items(name, rows=rows, keys=item_keys, split=split, consumable=consumable)  # noqa: E731
        if project is None or len(set(new)) < len(new) or set(new) & set(project.items):
            self._refused(StoreError, call)
            return
        assert call() == len(rows)
        project.items.update({k: (r, split, consumable) for k, r in zip(new, rows)})

    # ---- labels -----------------------------------------------------------------------------
    def _new_observations(self, project, pairs, call, who: str, source: str, number) -> list | None:
        """The observations a call recording `pairs` must add (a label equal to `who`'s latest for
        the item in that round is not recorded again), or None after checking that a batch with a
        bad answer (unknown key, refused label, a key given two labels) is refused unchanged."""
        answered = [(k, v) for k, v in pairs if v is not None]
        if self._bad_answers(project, answered):
            self._refused(DataError, call)
            return None
        texts = {k: v[1] for k, v in answered}
        return [Obs(k, t, who, source, number) for k, t in texts.items() if project.latest(k, who=who, round=number) != t]

    @rule(name=busy_names)
    def record_observations(self, name):
        """Unknown keys, refused labels and a key given two labels refuse the batch; a label equal to
        `who`'s latest for the item (in that round, when one is given) is not recorded again."""
        project = self.model.get(name)
        who, in_round = self.rng.choice(WHO), self.rng.random() < 0.25
        pairs = [(k, self._label(maybe=True)) for k in self._keys(project)]
        number = self._number(project) if in_round else None
        given = [(k, v[0]) for k, v in pairs if v is not None]
        call = lambda: self.store.record_observations(name, given, who=who, source="obs", round_number=number)  # noqa: E731
        if project is None or (number is not None and project.round(number) is None):
            self._refused(StoreError, call)
            return
        new = self._new_observations(project, pairs, call, who, "obs", number)
        if new is None:
            return
        assert call() == len(new)
        project.obs.extend(new)

    @rule(name=busy_names)
    def record_labels(self, name):
        """Checked appends, as if after every other writer: a row whose label the item has already
        (a reusable item: its answer in the row's round) is a repeat, not written (None in place
        of its id); of the others, one whose `expected` label is no longer current (`stale`) is a
        conflict unless `relabel`, and then nothing is written and the conflicts come back.
        Unknown rounds, unknown keys, refused labels raise."""
        project = self.model.get(name)
        who, stale, relabel = self.rng.choice(WHO), self.rng.random() < 0.3, self.rng.random() < 0.2
        rows = [(k, self._label(), self.rng.choice((None,) * 5 + (self._number(project),))) for k in self._keys(project)]
        given = [(k, v[0], n) for k, v, n in rows]
        expected = {k: project.latest(k) if project else None for k, _, _ in rows}
        if stale and rows:
            first = rows[0][0]
            expected[first] = "2" if expected[first] is None else None
        call = lambda: self.store.record_labels(name, given, who=who, source="label", expected=expected, relabel=relabel)  # noqa: E731
        if project is None or any(n is not None and project.round(n) is None for _, _, n in rows):
            self._refused(StoreError, call)
            return
        if any(v[1] is None for _, v, _ in rows) or any(k not in project.items for k, _, _ in rows):
            self._refused(DataError, call)
            return

        def repeats(key: str, value: str, number: int | None) -> bool:
            reusable = not project.items[key][2]
            return value == (project.latest(key, round=number) if number is not None and reusable else project.latest(key))

        todo = [(k, v, n) for k, v, n in rows if not repeats(k, v[1], n)]
        conflicts = {} if relabel else {k: (expected[k], project.latest(k)) for k, _, _ in todo if expected[k] != project.latest(k)}
        if conflicts:
            assert call() == ([], conflicts)
            self._refusal = True
            return
        ids, none = call()
        written = [i for i in ids if i is not None]
        assert none == {} and [i is None for i in ids] == [repeats(k, v[1], n) for k, v, n in rows]
        assert written == sorted(set(written))
        self._refusal = not todo
        project.obs.extend(Obs(k, v[1], who, "label", n) for k, v, n in todo)

    @rule(name=busy_names)
    def retract_observation(self, name):
        """Take back an observation (the latest mostly, as the prompt's undo does) of a project
        (`name`'s mostly) through project `name`: refused for another project's observation, a
        missing one, and one of a round that no longer waits for answers (not "queried")."""
        owner = self.rng.choice([name] * 5 + list(NAMES))
        index = self.rng.choice((-1, -1, -2, self.rng.randrange(50)))
        source = self.model.get(owner)
        if source is None or not source.obs:
            self._refused(StoreError, lambda: self.store.retract_observation(name, MISSING_ITEM_ID))
            return
        index %= len(source.obs)
        observation_id = self.store.observations(owner)[index]["id"]
        obs = source.obs[index]
        waiting = obs.round is None or source.round(obs.round).status == "queried"
        if name != owner or not waiting:
            self._refused(StoreError, lambda: self.store.retract_observation(name, observation_id))
            return
        assert self.store.retract_observation(name, observation_id) == obs.key
        del source.obs[index]

    # ---- rounds -------------------------------------------------------------------------------
    @rule()
    def round_step(self):
        """One step of a round's life, the one that fits the latest round's status mostly (start
        after a finished round, queries for a fitted one, answers for a queried one, the next
        status otherwise), any of them otherwise. (The only rule of one argument: hypothesis picks
        the rule it sorts first most often.)"""
        name = self.rng.choice(sorted(self.model) * 3 + list(NAMES))  # an existing project mostly
        project = self.model.get(name)
        latest = project.rounds[-1].status if project is not None and project.rounds else "done"
        fitting = {"done": "start", "failed": "start", "fitted": "queries", "queried": "answers"}.get(latest, "advance")
        step = self.rng.choice([fitting] * 12 + ["start", "advance", "queries", "answers"])
        {"start": self.start_round, "advance": self.advance_round, "queries": self.record_queries,
         "answers": self.record_answers}[step](name)  # fmt: skip

    def start_round(self, name: str) -> None:
        """A new round while the latest is finished (done, failed), numbered after it, counting the
        labelled pool items."""
        project = self.model.get(name)
        seed = self.rng.randint(0, 3)
        call = lambda: self.store.start_round(name, posterior="post", acquisition="acq", seed=seed)  # noqa: E731
        if project is None or (project.rounds and project.rounds[-1].status not in ("done", "failed")):
            self._refused(StoreError, call)
            return
        rnd = RoundM(len(project.rounds) + 1, len(project.labelled("pool")))
        info = call()
        assert (info.number, info.status, info.labelled_count, info.seed) == (rnd.number, "started", rnd.labelled_count, seed)
        project.rounds.append(rnd)

    def advance_round(self, name: str) -> None:
        """Only the moves of the round status graph (the next status mostly, any otherwise);
        "failed" records its reason."""
        project = self.model.get(name)
        number = self._number(project)
        rnd = project.round(number) if project else None
        following = [NEXT[rnd.status]] * 14 if rnd is not None and rnd.status in NEXT else []
        status = self.rng.choice(following + list(STATUSES))
        reason = f"reason {number}" if status == "failed" else None
        fields = {"failure_reason": reason} if reason else {}
        call = lambda: self.store.advance_round(name, number, status, **fields)  # noqa: E731
        if rnd is None or status not in ALLOWED[rnd.status]:
            self._refused(StoreError, call)
            return
        info = call()
        assert (info.number, info.status, info.failure_reason) == (number, status, reason)
        rnd.status, rnd.failure_reason = status, reason

    def record_queries(self, name: str) -> None:
        """A fitted round's queries (rank = position; a score that is not finite is stored as 0),
        with or without every candidate's score; a key twice, an unknown item, a test item, or a
        round not "fitted" refuse them all."""
        project = self.model.get(name)
        number = self._number(project)
        query_keys = self._keys(project, unique=True, min_size=1)
        with_candidates = self.rng.random() < 0.5
        scores = [self.rng.choice(SCORES) for _ in query_keys]
        ids = self._item_ids(name, query_keys) if project else [MISSING_ITEM_ID] * len(query_keys)
        extra: dict[str, Any] = {}
        if with_candidates:
            candidate_ids = self.store.candidates(name)[0] if project else []
            extra = {"candidate_ids": candidate_ids, "candidate_scores": [0.25] * len(candidate_ids)}
        call = lambda: self.store.record_queries_and_scores(name, number, ids, scores, timings={"score_s": 1.0}, **extra)  # noqa: E731
        rnd = project.round(number) if project else None
        if rnd is None or rnd.status != "fitted" or len(set(query_keys)) < len(query_keys) \
                or any(k not in project.items or project.items[k][1] != "pool" for k in query_keys):  # fmt: skip
            self._refused(StoreError, call)
            return
        info = call()
        assert (info.status, info.timings) == ("scored", {"score_s": 1.0})
        rnd.status, rnd.scored = "scored", with_candidates
        rnd.queries = [(k, s if math.isfinite(s) else 0.0) for k, s in zip(query_keys, scores)]

    def record_answers(self, name: str) -> None:
        """Answers to a round (its queries' keys mostly), and with `complete` its move to
        "answered" (only from "queried"), in one transaction: a refused move writes no answer."""
        project = self.model.get(name)
        number = self._number(project)
        rnd = project.round(number) if project else None
        who, complete = self.rng.choice(WHO), self.rng.choice((True, True, False))
        asked = [k for k, _ in rnd.queries] if rnd is not None and rnd.queries and self.rng.random() < 0.5 else []
        pairs = [(k, self._label(maybe=True)) for k in asked or self._keys(project)]
        given = [(k, v[0] if v else None) for k, v in pairs]
        call = lambda: self.store.record_answers(name, number, given, who=who, source="oracle", complete=complete)  # noqa: E731
        if rnd is None:
            self._refused(StoreError, call)
            return
        new = self._new_observations(project, pairs, call, who, "oracle", number)
        if new is None:
            return
        if complete and rnd.status != "queried":
            self._refused(StoreError, call)
            return
        assert call() == len(new)
        project.obs.extend(new)
        if complete:
            rnd.status = "answered"

    # ---- round lock -----------------------------------------------------------------------------
    @rule(name=names, nested=st.booleans())
    def hold_round_lock(self, name, nested):
        """While this store holds a project's round lock the database names this process, another
        store finds it busy, and (`nested`) it is re-entrant; released, no holder is left."""
        if name not in self.model:
            self._refused(StoreError, lambda: self.store.round_lock(name).__enter__())
            return
        with self.store.round_lock(name) as lock:
            assert self.store.round_lock_holder(name).pid == os.getpid()
            if nested:
                with self.store.round_lock(name) as again:
                    assert again is lock
            with pytest.raises(RoundBusyError), self.other.round_lock(name):
                pass
        assert self.store.round_lock_holder(name) is None

    # ---- invariants -------------------------------------------------------------------------------
    @invariant()
    def stored_rows_match_the_model(self):
        """Every row of every table is the model's (no orphan, no extra row); a query's round and
        item, and an observation's item and round, belong to one project; no query repeats an item
        of its round; no round lock is left behind; after a refused step no column of any row
        (timestamps included) has changed."""
        dump = self._dump()
        if self._refusal:
            assert dump == self._rows, "a refused operation changed the database"
        self._rows, self._refusal = dump, False
        names = {r["id"]: r["name"] for r in dump["projects"]}
        items = {r["id"]: (names.get(r["project_id"]), r["key"]) for r in dump["items"]}
        rounds = {r["id"]: (names.get(r["project_id"]), r["number"]) for r in dump["rounds"]}
        by_project = lambda rows: sorted(rows, key=lambda row: str(row[0]))  # noqa: E731 - stable: by id within a project
        got_items = by_project((names.get(r["project_id"]), r["key"], r["row"], r["split"], bool(r["consumable"]))
                               for r in dump["items"])  # fmt: skip
        got_obs = by_project((*items.get(o["item_id"], (None, None)), o["value"], o["who"], o["source"],
                              rounds[o["round_id"]][1] if o["round_id"] is not None else None) for o in dump["observations"])  # fmt: skip
        assert all(rounds[o["round_id"]][0] == items[o["item_id"]][0] for o in dump["observations"] if o["round_id"] is not None)
        got_rounds = sorted((*rounds[r["id"]], r["status"], r["labelled_count"], r["failure_reason"]) for r in dump["rounds"])
        got_queries = sorted((*rounds.get(q["round_id"], (None, None)), q["rank"], items.get(q["item_id"], (None, None))[1], q["score"])
                             for q in dump["queries"])  # fmt: skip
        assert all(rounds[q["round_id"]][0] == items[q["item_id"]][0] for q in dump["queries"])
        assert len({(q["round_id"], q["item_id"]) for q in dump["queries"]}) == len(dump["queries"])
        got_scored = sorted(rounds.get(c["round_id"]) for c in dump["round_scores"])
        want_items, want_obs, want_rounds, want_queries, want_scored = [], [], [], [], []
        for name in sorted(self.model):
            project = self.model[name]
            want_items += [(name, k, r, sp, c) for k, (r, sp, c) in project.items.items()]
            want_obs += [(name, o.key, o.value, o.who, o.source, o.round) for o in project.obs]
            for rnd in project.rounds:
                want_rounds.append((name, rnd.number, rnd.status, rnd.labelled_count, rnd.failure_reason))
                want_queries += [(name, rnd.number, rank, k, score) for rank, (k, score) in enumerate(rnd.queries)]
                want_scored += [(name, rnd.number)] if rnd.scored else []
        assert sorted(names.values()) == sorted(self.model)
        assert (got_items, got_obs, got_rounds, got_queries, got_scored) == (want_items, want_obs, want_rounds, want_queries, want_scored)
        assert dump["round_locks"] == []

    @invariant()
    def reads_match_the_model(self):
        """`PoolStore`'s reads of each project that changed since they were last checked (the reads
        are functions of the rows, which `stored_rows_match_the_model` checks at every step)."""
        current = {name: repr(project) for name, project in self.model.items()}
        if current == self._verified:
            return
        assert self.store.projects() == sorted(self.model)
        for name, project in self.model.items():
            if self._verified.get(name) != current[name]:
                self._check_reads(name, project)
        self._verified = current

    def _check_reads(self, name: str, project: ProjectM) -> None:
        """Labelled + unlabelled == items per split, `labels` lists the labelled items in item order
        with their latest label and `count_labelled` counts them; the candidates are the pool's
        unlabelled consumable items and every reusable one; `label_states` agrees and leaves unknown
        keys out; the observations, the rounds (at most one unfinished, the latest last) and each
        round's queries (key, row, score, rank 0..n-1, answer: the latest label of a consumable
        item, the round's own of a reusable one) are the model's."""
        store = self.store
        info = store.project(name)
        assert (info.classes, info.settings) == (CLASSES, project.settings)
        assert store.item_keys(name) == set(project.items)
        for split in ("pool", "test"):
            in_split = [k for k, (_, sp, _) in project.items.items() if sp == split]
            labelled = project.labelled(split)
            unlabelled = [k for k in in_split if project.latest(k) is None]
            assert store.count_items(name, split=split) == len(in_split) == len(labelled) + len(unlabelled)
            assert store.count_labelled(name, split=split) == len(labelled)
            rows, got_keys, values = store.labels(name, split=split)
            assert got_keys == labelled
            assert rows.tolist() == [project.items[k][0] for k in labelled]
            assert values == [project.latest(k) for k in labelled]
        assert store.count_items(name) == len(project.items)
        candidates = [k for k, (_, sp, c) in project.items.items() if sp == "pool" and (not c or project.latest(k) is None)]
        assert store.candidates(name)[1].tolist() == [project.items[k][0] for k in candidates]
        assert store.count_candidates(name) == len(candidates)
        states = store.label_states(name, list(KEYS) + [UNKNOWN])
        assert {k: (s["split"], s["consumable"], s["label"]) for k, s in states.items()} == {
            k: (sp, c, project.latest(k)) for k, (_, sp, c) in project.items.items()}  # fmt: skip
        rounds = store.rounds(name)
        numbers = {r.id: r.number for r in rounds}
        got = [(o["key"], o["value"], o["who"], o["source"], numbers.get(o["round_id"])) for o in store.observations(name)]
        assert got == [(o.key, o.value, o.who, o.source, o.round) for o in project.obs]
        assert [(r.number, r.status, r.labelled_count, r.failure_reason) for r in rounds] == [
            (r.number, r.status, r.labelled_count, r.failure_reason) for r in project.rounds]  # fmt: skip
        assert sum(not r.status.finished for r in rounds) <= 1
        latest = store.latest_round(name)
        assert (latest.number if latest else None) == (len(project.rounds) or None)
        for rnd in project.rounds:
            answers = [project.latest(k, round=None if project.items[k][2] else rnd.number) for k, _ in rnd.queries]
            want = [(k, project.items[k][0], s, rank, a) for rank, ((k, s), a) in enumerate(zip(rnd.queries, answers))]
            assert [(q.key, q.row, q.score, q.rank, q.value) for q in store.queries(name, rnd.number)] == want
        assert store.scored_rounds(name) == [r.number for r in project.rounds if r.scored]


def test_store_operations_keep_the_models_state(db_url):
    """The state machine on a SQLite file, then (marked postgres) on a fresh PostgreSQL schema."""
    store, other = PoolStore(db_url), PoolStore(db_url)
    try:
        profile = PG_PROFILE if store.engine.dialect.name == "postgresql" else PROFILE
        run_state_machine_as_test(lambda: StoreMachine(store, other), settings=profile)
    finally:
        other.close()
        store.close()

"""`activebayes.design.record.DesignRecord` on SQLite and PostgreSQL: of several sessions of one
participant writing the same trial at once, exactly one records it (the count of recorded
trials and the write are one transaction)."""

from __future__ import annotations

import threading

import torch

from activebayes.design import Trial
from activebayes.design.record import DesignRecord
from activebayes.errors import StoreError
from activebayes.store import PoolStore

DESIGNS = torch.arange(1.0, 16.0)
WRITERS = 6


def _trial(index: int, digits: float) -> Trial:
    return Trial(index, digits, 1, 0.2, 7.0, 1.5, (5.0, 9.0))


def test_writers_of_one_trial_number_at_once_record_it_once(db_url):
    with PoolStore(db_url) as store:
        DesignRecord(store, DESIGNS, participant="ann").add(_trial(0, 7.0))
    start = threading.Barrier(WRITERS)
    outcomes: list[str] = []

    def write(digits: float) -> None:
        with PoolStore(db_url) as store:
            record = DesignRecord(store, DESIGNS, participant="ann")
            start.wait()
            try:
                record.add(_trial(0, digits), offset=1)  # trial 2 of ann, as each session expects
                outcomes.append("recorded")
            except StoreError as exc:
                assert "'ann' has 2 recorded trials where this session expected 1" in str(exc), exc
                outcomes.append("refused")

    threads = [threading.Thread(target=write, args=(float(d),)) for d in range(2, 2 + WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["recorded"] + ["refused"] * (WRITERS - 1)
    with PoolStore(db_url) as store:
        trials = DesignRecord(store, DESIGNS, participant="ann").trials()
    assert [t["trial"] for t in trials] == [0, 1]


def test_another_participant_s_trials_do_not_count(db_url):
    with PoolStore(db_url) as store:
        DesignRecord(store, DESIGNS, participant="ann").add(_trial(0, 7.0))
        bob = DesignRecord(store, DESIGNS, participant="bob")
        bob.add(_trial(0, 6.0))
        bob.add(_trial(1, 5.0))
        assert [t["trial"] for t in bob.trials()] == [0, 1]

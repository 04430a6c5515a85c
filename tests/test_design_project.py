"""A memory-span design project through the project commands: where `design memory-span` records
(the global --db and ACTIVEBAYES_DB count), resuming a simulated participant, and `status`,
`export`, `delete`, `pool add`, `round` and `label` on a design project."""

from __future__ import annotations

import csv
import io
import json

import pytest

from cli_checks import assert_mistake, db_dump, ok, run

SESSION = ["design", "memory-span", "--simulate-span", "6.5"]


def _session(*args: str) -> dict:
    """A simulated session under --json: its JSON object."""
    return json.loads(ok(*args, "--json").stdout)


def test_global_db_and_environment_record_a_simulation(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACTIVEBAYES_DB", raising=False)
    monkeypatch.delenv("ACTIVEBAYES_PROJECT", raising=False)
    nowhere = ok(*SESSION, "--participant", "n", "--trials", "2")
    assert "not recorded" in nowhere.stdout and "--db" in nowhere.stdout
    assert list(tmp_path.iterdir()) == []  # no activebayes.db for a simulation without a --db
    typed = ok("--db", "tA.db", *SESSION, "--participant", "a", "--trials", "3")
    assert "recorded 'a' in sqlite:///tA.db" in typed.stdout
    monkeypatch.setenv("ACTIVEBAYES_DB", "tB.db")
    from_env = _session(*SESSION, "--participant", "e", "--trials", "2")
    assert from_env["db"] == "sqlite:///tB.db" and from_env["project"] == "memory-span"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tA.db", "tB.db"]
    resumed = run(*SESSION, "--participant", "e", "--trials", "1")
    assert "resumed 'e': 2 earlier trials" in resumed.stdout and "trial   3:" in resumed.stdout
    status = json.loads(ok("--db", "tA.db", "status", "--json").stdout)
    assert [(p["participant"], p["trials"]) for p in status["participants"]] == [("a", 3)]


def test_resumed_simulation_continues_the_same_stream(tmp_path):
    straight = _session("--db", str(tmp_path / "one.db"), *SESSION, "--participant", "p1", "--trials", "13")
    split_db = str(tmp_path / "two.db")
    first = _session("--db", split_db, *SESSION, "--participant", "p1", "--trials", "5")
    result = ok("--db", split_db, *SESSION, "--participant", "p1", "--trials", "8", "--json")
    second = json.loads(result.stdout)
    assert "resumed 'p1': 5 earlier trials" in result.stderr and "up to 8 more (trials 6-13)" in result.stderr
    assert [t["trial"] for t in second["trials"]] == list(range(6, 14)) and second["earlier_trials"] == 5
    assert first["trials"] + second["trials"] == straight["trials"]
    assert second["posterior"] == straight["posterior"]
    text = ok("--db", split_db, *SESSION, "--participant", "p1", "--trials", "1").stdout
    assert "after 14 trials (1 now, 13 before)" in text
    help_text = " ".join(ok("design", "memory-span", "--help").stdout.split())
    assert "this many MORE after their recorded trials (not a total)" in help_text


def test_simulated_participant_draws_each_trial_from_seed_participant_and_number():
    from activebayes.design import SimulatedParticipant
    from activebayes.errors import ConfigError

    whole = SimulatedParticipant(6.5, seed=4, participant="ann")
    answers = [whole.answer(float(d)) for d in [7, 6, 5, 6, 7, 6, 5, 6]]
    rest = SimulatedParticipant(6.5, seed=4, participant="ann", first_trial=3)
    assert [rest.answer(float(d)) for d in [6, 7, 6, 5, 6]] == answers[3:]
    with pytest.raises(ConfigError, match="first_trial"):
        SimulatedParticipant(6.5, first_trial=2)


@pytest.fixture
def span_db(cli_db) -> str:
    """ACTIVEBAYES_DB holding the memory-span design project: p1's 5 + 8 trials and p2's 4."""
    ok(*SESSION, "--participant", "p1", "--trials", "5")
    ok(*SESSION, "--participant", "p1", "--trials", "8")
    ok("design", "memory-span", "--simulate-span", "4", "--participant", "p2", "--trials", "4")
    return cli_db


def test_status_of_a_design_project(span_db):
    data = json.loads(ok("status", "--json").stdout)
    assert data["task"] == "design" and data["trials"] == 17
    assert [(p["participant"], p["trials"]) for p in data["participants"]] == [("p1", 13), ("p2", 4)]
    straight = _session("--db", "straight.db", *SESSION, "--participant", "p1", "--trials", "13")
    assert data["participants"][0]["span"]["mean"] == pytest.approx(straight["posterior"]["mean"])
    assert "design memory-span --participant p2" in data["next"]
    text = " ".join(ok("status").stdout.split())
    assert "2 participants, 17 trials" in text and "pool items" not in text and "pool add" not in text
    assert "p1 │ 13" in text and "design memory-span --participant p2" in text


def test_export_writes_every_trial(span_db, tmp_path):
    ok("export", "trials.csv")
    rows = list(csv.DictReader((tmp_path / "trials.csv").open(encoding="utf-8")))
    assert len(rows) == 17 and list(rows[0]) == ["participant", "trial", "digits", "outcome", "eig", "source", "time"]
    assert [r["trial"] for r in rows if r["participant"] == "p1"] == [str(n) for n in range(1, 14)]
    assert rows[0]["digits"] == "7" and all(r["outcome"] in ("0", "1") and r["time"] for r in rows)
    piped = ok("export", "-")
    assert list(csv.DictReader(io.StringIO(piped.stdout))) == rows and "17 trials of 2 participants" in piped.stderr
    ok("export", "trials.json")
    assert_mistake(run("export", "trials.csv"), "the export file trials.csv already exists", "--force")
    assert list(csv.DictReader((tmp_path / "trials.csv").open(encoding="utf-8"))) == rows
    document = json.loads((tmp_path / "trials.json").read_text(encoding="utf-8"))
    assert document["task"] == "design" and len(document["trials"]) == 17
    assert document["trials"][-1] == {**document["trials"][-1], "participant": "p2", "trial": 4}


def test_pool_commands_on_a_design_project_are_refused_and_write_nothing(span_db, tmp_path):
    (tmp_path / "some.csv").write_text("a,b,label\n1,2,0\n3,4,1\n", encoding="utf-8")
    before = db_dump(span_db)
    for args in (["pool", "add", "some.csv"], ["round"], ["label"], ["label", "--from", "some.csv"],
                 ["export", "--format", "label-studio", "--out", "tasks.json"], ["report", "--out", "plots"],
                 ["evaluate"], ["evaluate", "--budget", "5"]):  # fmt: skip
        assert_mistake(run(*args), "is a design project", "design memory-span --participant")
    assert db_dump(span_db) == before
    assert not (tmp_path / "tasks.json").exists() and not (tmp_path / "plots").exists()


def test_delete_of_a_design_project_names_its_export_and_design(span_db):
    assert_mistake(run("delete", "memory-span"), "17 trials", "export memory-span-trials.csv")
    done = " ".join(ok("--db", span_db, "delete", "memory-span", "--yes").stdout.split())
    assert "the 17 trials participants gave" in done and "design memory-span --participant ID" in done
    assert "init" not in done


def test_a_classification_project_of_the_same_name_is_refused(cli_db):
    ok("init", "--name", "memory-span")
    before = db_dump(cli_db)
    assert_mistake(run(*SESSION, "--trials", "2"), "classification project", "--project NAME")
    assert db_dump(cli_db) == before
    ok("--project", "span", *SESSION, "--participant", "x", "--trials", "2")
    data = json.loads(ok("--project", "span", "status", "--json").stdout)
    assert data["trials"] == 2 and "--project span design memory-span --participant x" in data["next"]

"""The terminal prompt takes its turns with the labelling page and other prompts through the
page's item leases: two labellers of one round are never shown the same item at once, and an
item answered since the prompt started is passed over. Each interleaving is written out step by
step with two store connections, on SQLite and PostgreSQL."""

from __future__ import annotations

import io
import json

import pytest

from activebayes.oracles import PromptOracle
from activebayes.store import PoolStore
from activebayes.errors import RoundNotWaitingError
from activebayes.store.lease_access import FEW_ITEMS
from activebayes_cli._prompt_turns import PromptTurns, RoundGone, holder_name
from cli_checks import InterleavedInput
from test_cli_label import blobs, run  # noqa: F401  (blobs: the fixture)


def turns(store: PoolStore, who: str, keys: list[str]) -> PromptTurns:
    states = store.label_states("blobs", keys)
    return PromptTurns(store, "blobs", 1, holder_name(who), {k: states[k]["item_id"] for k in keys})


def test_two_prompts_take_turns_and_pass_over_what_the_other_answered(blobs):
    q = blobs.queries
    with PoolStore(blobs.db) as first, PoolStore(blobs.db) as second:
        ann, bob = turns(first, "ann", q), turns(second, "bob", q)
        assert ann.take(q[0])
        assert not bob.take(q[0])  # on ann's screen
        assert bob.take(q[1])
        first.record_labels("blobs", [(q[0], "a", 1)], who="ann", source="prompt", expected={q[0]: None})
        assert not ann.take(q[1]) and ann.take(q[2])  # bob has q[1]
        assert not bob.take(q[0])  # answered by ann: passed over although nobody holds it now
        second.record_labels("blobs", [(q[1], "b", 1)], who="bob", source="prompt", expected={q[1]: None})
        assert not bob.renew()  # the item answered, its lease is gone
        assert ann.renew() and ann.current == q[2]
        ann.release()
        assert bob.take(q[2])


def test_a_killed_prompt_s_item_goes_back_to_its_labeller_at_once_and_waits_for_others(blobs):
    q = blobs.queries
    with PoolStore(blobs.db) as store:
        killed = turns(store, "ann", q)
        assert killed.take(q[0])  # then killed: its lease was never released
        assert not turns(store, "bob", q).take(q[0])  # bob waits until it runs out
        again = turns(store, "ann", q)
        assert again.holder == killed.holder == "ann (terminal)" and again.take(q[0])  # ann's next prompt takes it back
        ids = {k: s["item_id"] for k, s in store.label_states("blobs", q).items()}
        assert store.lease_item("blobs", "ann", [ids[q[0]], ids[q[1]]], seconds=600, round_number=1) == ids[q[1]]  # her page: not the same item


def test_the_prompt_passes_over_the_item_on_the_page_and_the_page_over_the_prompt_s(blobs):
    q = blobs.queries
    with PoolStore(blobs.db) as store:
        ids = {k: s["item_id"] for k, s in store.label_states("blobs", q).items()}
        assert store.lease_item("blobs", "bob", [ids[q[0]]], seconds=600, round_number=1) == ids[q[0]]  # bob's page shows q[0]
        ann = turns(store, "ann", q)
        assert ann.take(q[1])
        assert store.lease_item("blobs", "bob", [ids[q[1]], ids[q[2]]], seconds=600, round_number=1) == ids[q[2]]  # bob's next page


def test_label_at_the_prompt_passes_over_the_page_s_item_and_leaves_no_lease(blobs, monkeypatch):
    import activebayes_cli._label_prompt

    monkeypatch.setattr(activebayes_cli._label_prompt, "_at_a_terminal", lambda: True)  # a person who sees the items
    q = blobs.queries
    with PoolStore(blobs.db) as store:
        bob_item = store.label_states("blobs", [q[0]])[q[0]]["item_id"]
        store.lease_item("blobs", "bob", [bob_item], seconds=600, round_number=1)
    result = run("--db", blobs.db, "--json", "label", "--who", "ann", input="a\nq\n")
    assert result.exit_code == 0, result.output
    assert f"item 1/5: {q[0]} is with another labeller" in result.stderr
    summary = json.loads(result.stdout)
    assert (summary["recorded"], summary["with_others"], summary["remaining"]) == (1, 1, 4)
    assert blobs.labels() == {q[1]: "a"}  # the prompt's answer went to the next item, q[0] is bob's
    with PoolStore(blobs.db) as store:  # the prompt's lease ended with it; bob's page still holds q[0]
        assert store.lease_item("blobs", "carol", [bob_item], seconds=1, round_number=1) is None


def test_answers_piped_in_pass_nothing_over(blobs):
    """Piped in, each line answers the next item listed: passing one over would shift the answers."""
    q = blobs.queries
    with PoolStore(blobs.db) as store:
        bob_item = store.label_states("blobs", [q[0]])[q[0]]["item_id"]
        store.lease_item("blobs", "bob", [bob_item], seconds=600, round_number=1)
    result = run("--db", blobs.db, "label", "--who", "ann", input="a\nb\n")
    assert result.exit_code == 0 and "passed over" not in result.stdout, result.output
    assert blobs.labels() == {q[0]: "a", q[1]: "b"}


def test_prompt_oracle_passes_over_what_on_show_refuses():
    out = io.StringIO()
    oracle = PromptOracle(classes=["a", "b"], input=io.StringIO("b\n"), output=out, on_show=lambda key: key != "k1")
    answers = oracle.ask(["k1", "k2"])
    assert [a.value for a in answers] == [None, "b"]
    assert oracle.passed == ["k1"] and oracle.skipped == set()
    assert "item 1/2: k1 is with another labeller (answered or on their screen); passed over" in out.getvalue()


def test_a_short_and_a_long_list_pass_over_the_same_answered_item(blobs):
    """A list of up to FEW_ITEMS ids reads those items' answers, a longer one the round's: alike."""
    q = blobs.queries
    with PoolStore(blobs.db) as store:
        ids = {k: s["item_id"] for k, s in store.label_states("blobs", q).items()}
        store.record_labels("blobs", [(q[0], "a", 1)], who="ann", source="prompt", expected={q[0]: None})
        short, long = [ids[q[0]], ids[q[1]]], [ids[q[0]]] * FEW_ITEMS + [ids[q[1]]]
        assert store.lease_item("blobs", "bob", short, seconds=600, round_number=1) == ids[q[1]]
        assert store.lease_item("blobs", "bob", long, seconds=600, round_number=1) == ids[q[1]]
        assert store.lease_item("blobs", "bob", [ids[q[0]]], seconds=600, round_number=1) is None


def test_a_round_that_waits_no_longer_leases_nothing_and_the_prompt_says_which_waits(blobs):
    q, p = blobs.queries, blobs.pool
    with PoolStore(blobs.db) as store:
        ids = {k: s["item_id"] for k, s in store.label_states("blobs", q).items()}
        ann = turns(store, "ann", q)
        assert ann.take(q[0])
        _discard_round_1_and_ask(blobs.db, [q[1], p[0]])()
        with pytest.raises(RoundNotWaitingError, match="round 1 of project 'blobs' no longer waits for answers"):
            store.lease_item("blobs", "ann", [ids[q[2]]], seconds=600, round_number=1, waiting=True)
        with pytest.raises(RoundGone, match=r"round 1 no longer waits for answers \(closed or discarded meanwhile\); round 2 waits now"):
            ann.take(q[1])
        assert store.lease_item("blobs", "bob", [ids[q[2]]], seconds=600) == ids[q[2]]  # ann's refused lease took nothing


def _discard_round_1_and_ask(db: str, keys: list[str]):
    """Another session's `round --restart-round`: round 1 discarded, round 2 asking `keys`."""
    from test_cli_label import open_round

    def step() -> None:
        with PoolStore(db) as store:
            store.advance_round("blobs", 1, "failed", failure_reason="discarded")
        open_round(db, "blobs", keys)

    return step


def test_an_answer_typed_while_another_session_replaced_the_round_goes_to_the_new_round(blobs, interleaved_input):
    q, p = blobs.queries, blobs.pool
    typed = InterleavedInput("a\nb\n", _discard_round_1_and_ask(blobs.db, [q[0], p[0]]))
    result = run("--db", blobs.db, "label", "--who", "ann", input=typed)
    assert result.exit_code == 0, result.output
    assert "round 1 no longer waits for answers: recorded for round 2, which asks" in result.stdout
    assert "round 1 no longer waits for answers (closed or discarded meanwhile); round 2 waits now" in result.stdout
    assert "1 query of round 2 still open" in result.stdout  # p[0]; the prompt showed nothing after q[0]
    assert blobs.labels() == {q[0]: "a"} and blobs.rounds_of()[q[0]] == 2


def test_an_answer_to_an_item_the_new_round_does_not_ask_is_recorded_outside_a_round(blobs, interleaved_input):
    q, p = blobs.queries, blobs.pool
    typed = InterleavedInput("c\n", _discard_round_1_and_ask(blobs.db, [p[0]]))
    result = run("--db", blobs.db, "--json", "label", "--who", "ann", input=typed)
    assert result.exit_code == 0, result.output
    assert "recorded outside a round" in result.stderr
    assert json.loads(result.stdout)["remaining"] == 1
    assert blobs.labels() == {q[0]: "c"} and blobs.rounds_of()[q[0]] is None


def test_a_stopped_server_hands_its_pages_items_back(blobs):
    pytest.importorskip("httpx", reason="httpx (starlette's TestClient) is not installed")
    from activebayes.web import Grant
    from test_serve import Page, app_for

    q = blobs.queries
    bob = Grant.new("bob", "blobs")
    with PoolStore(blobs.db) as store:
        with app_for(blobs.db, bob) as client:
            assert Page(client, bob).next()["shown"] == q[0]
            assert not turns(store, "ann", q).take(q[0])  # on bob's page
        assert turns(store, "ann", q).take(q[0])  # the server stopped: its lease ended with it


def test_a_file_read_while_another_session_replaced_the_round_records_nothing(blobs, monkeypatch):
    from cli_checks import assert_mistake, db_dump
    from test_cli_label import write

    q = blobs.queries
    write("answers.csv", f"key,label\n{q[0]},a\n{q[1]},b\n")
    real = PoolStore.label_states
    steps = [_discard_round_1_and_ask(blobs.db, [q[0]])]

    def read_then_replaced(self, *args, **kwargs):  # the file is checked; then the other session's round --restart-round
        states = real(self, *args, **kwargs)
        if steps:
            steps.pop()()
        return states

    monkeypatch.setattr(PoolStore, "label_states", read_then_replaced)
    before = db_dump(blobs.db)
    assert_mistake(run("--db", blobs.db, "label", "--who", "ann", "--from", "answers.csv"),
                   "the waiting round changed while answers.csv was read", "nothing was recorded", "run the same command again")
    after = db_dump(blobs.db)
    monkeypatch.setattr(PoolStore, "label_states", real)
    assert run("--db", blobs.db, "label", "--who", "ann", "--from", "answers.csv").exit_code == 0
    recorded = blobs.rounds_of()
    assert blobs.labels() == {q[0]: "a", q[1]: "b"} and (recorded[q[0]], recorded[q[1]]) == (2, None)  # the round asking q[0] now
    observed = [[line for line in dump if "observations" in line] for dump in (before, after)]
    assert observed[0] == observed[1]  # the refused run wrote no answer

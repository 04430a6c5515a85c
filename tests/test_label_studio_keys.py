"""Label Studio tasks of an image folder keyed by its files' paths (`pool add FOLDER --truth`, or a
folder converted before `img-NNNN` keys): a path such as `dark/dark0.png` spells the class, so
the tasks carry an opaque `activebayes_query` instead of the key, their images are copies named
after it, and `label --from` maps the id back through the store; files exported with the keys
still import, and an id no query has is one line, exit 2, nothing written. On SQLite and
PostgreSQL."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

from activebayes.data.label_studio import answers_from_export, parse_task_id, task_id
from activebayes.errors import DataError
from activebayes.store import PoolStore
from cli_checks import assert_mistake, db_dump, ok, run, same_picture
from test_cli_label import open_round

CLASSES = ("dark", "light")
ID = re.compile(r"r1-q[1-4]-[0-9a-f]{10}")


def path_keyed_pool(db: str, root: Path) -> dict[str, str]:
    """Project 'shapes' over `root/images/{dark,light}/*.png` (four of each), its labels in a
    --truth csv keyed by the paths, so that the keys are the paths. Returns each key's class."""
    from PIL import Image

    rng = np.random.default_rng(0)
    truth = {}
    for label, level in zip(CLASSES, (40, 215)):
        (root / "images" / label).mkdir(parents=True, exist_ok=True)
        for i in range(4):
            pixels = np.clip(level + rng.normal(scale=20, size=(12, 12)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / "images" / label / f"{label}{i}.png")
            truth[f"{label}/{label}{i}.png"] = label
    (root / "truth.csv").write_text("key,label\n" + "".join(f"{k},{v}\n" for k, v in truth.items()))
    ok("init", "--name", "shapes", "--classes", ",".join(CLASSES))
    ok("pool", "add", str(root / "images"), "--truth", str(root / "truth.csv"))
    with PoolStore(db) as store:
        assert set(store.item_keys("shapes")) == set(truth)  # the keys are the paths, which spell the class
    return truth


def path_keyed_folder(db: str, root: Path) -> tuple[list[str], dict[str, str]]:
    """`path_keyed_pool`, with round 1 waiting for answers to two items of each class
    (alternating). Returns (the round's keys in rank order, each key's class)."""
    truth = path_keyed_pool(db, root)
    keys = ["light/light2.png", "dark/dark1.png", "light/light0.png", "dark/dark3.png"]
    open_round(db, "shapes", keys)
    return keys, truth


def annotated(tasks: list[dict], labels: list[str | None]) -> list[dict]:
    """`tasks` as Label Studio exports them, task i answered `labels[i]` (None: no annotation)."""
    out = []
    for i, (task, label) in enumerate(zip(tasks, labels), start=1):
        result = {"type": "choices", "from_name": "label", "to_name": "image", "value": {"choices": [label]}}
        annotations = [] if label is None else [{"id": 100 + i, "result": [result], "was_cancelled": False,
                                                   "updated_at": "2026-01-02T10:00:00Z"}]  # fmt: skip
        out.append({"id": i, "data": task["data"], "annotations": annotations, "predictions": []})
    return out


def write_json(name: str, value) -> str:
    Path(name).write_text(json.dumps(value), encoding="utf-8")
    return name


def recorded(db: str) -> dict[str, str]:
    with PoolStore(db) as store:
        _, keys, values = store.labels("shapes", split="pool")
    return dict(zip(keys, values))


def test_tasks_name_neither_the_paths_nor_the_classes(cli_db, tmp_path):
    keys, _ = path_keyed_folder(cli_db, tmp_path)
    summary = json.loads(ok("--json", "export", "--format", "label-studio", "--out", "tasks.json").stdout)
    text = Path("tasks.json").read_text()
    for word in (*keys, *CLASSES, str(tmp_path / "images")):  # neither a key, nor a class folder, nor the pool's folder
        assert word not in text, word
    assert summary["opaque_ids"] is True and summary["images"] == "tasks-images"
    tasks = json.loads(text)
    digests = {k: hashlib.sha256((tmp_path / "images" / k).read_bytes()).hexdigest() for k in keys}
    for rank, (task, key) in enumerate(zip(tasks, keys)):
        data = task["data"]
        assert "activebayes_key" not in data and data["rank"] == rank + 1
        assert data["activebayes_query"] == f"r1-q{rank + 1}-{digests[key][:10]}"
        image = Path(data["image"])
        assert image.parent == Path("tasks-images").resolve() and image.name == f"{rank + 1:03d}-{data['activebayes_query']}.png"
        assert same_picture(image, tmp_path / "images" / key)  # a copy of that query's own picture
    printed = " ".join(ok("export", "--format", "label-studio", "--out", "tasks.json", "--force").stdout.split())
    assert "carry an opaque activebayes_query" in printed and "serve tasks-images and pass --image-url" in printed
    # served: the prefix and the copy's name, not the path in the pool's folder
    ok("export", "--format", "label-studio", "--out", "served.json", "--image-url", "http://localhost:8081/")
    served = json.loads(Path("served.json").read_text())
    assert [t["data"]["image"] for t in served] == [f"http://localhost:8081/{r + 1:03d}-{t['data']['activebayes_query']}.png"
                                                    for r, t in enumerate(served)]  # fmt: skip
    assert not any(word in Path("served.json").read_text() for word in (*keys, *CLASSES))


def test_ids_map_back_and_old_files_with_keys_still_import(cli_db, tmp_path):
    keys, truth = path_keyed_folder(cli_db, tmp_path)
    ok("export", "--format", "label-studio", "--out", "tasks.json")
    tasks = json.loads(Path("tasks.json").read_text())
    export = annotated(tasks, [truth[keys[0]], truth[keys[1]], None, None])
    summary = json.loads(ok("--json", "label", "--from", write_json("export.json", export), "--who", "ann").stdout)
    assert summary["round_answers"] == 2 and summary["skipped"] == 2 and summary["remaining"] == 2
    assert recorded(cli_db) == {keys[0]: truth[keys[0]], keys[1]: truth[keys[1]]}
    # a file exported before the ids, each task carrying its key: read as it always was
    old = [dict(t, data={**{k: v for k, v in t["data"].items() if k != "activebayes_query"}, "activebayes_key": key})
           for t, key in zip(export, keys)]  # fmt: skip
    old = annotated(old, [None, None, truth[keys[2]], truth[keys[3]]])
    assert json.loads(ok("--json", "label", "--from", write_json("old.json", old)).stdout)["round_answers"] == 2
    assert recorded(cli_db) == {k: truth[k] for k in keys}


def test_an_unknown_or_edited_id_is_refused_and_nothing_is_written(cli_db, tmp_path):
    keys, truth = path_keyed_folder(cli_db, tmp_path)
    ok("export", "--format", "label-studio", "--out", "tasks.json")
    tasks = annotated(json.loads(Path("tasks.json").read_text()), [truth[k] for k in keys])
    before = db_dump(cli_db)

    def edited(number: int, **data) -> str:
        changed = [dict(t) for t in tasks]
        changed[number - 1] = dict(changed[number - 1], data={**changed[number - 1]["data"], **data})
        return write_json(f"edited-{number}.json", changed)

    first = tasks[0]["data"]["activebayes_query"]
    swapped = first.replace("-q1-", "-q2-")  # another query of the round, with the first one's check
    assert_mistake(run("label", "--from", edited(1, activebayes_query=swapped)), "task 1", repr(swapped), "no query of this project")
    assert_mistake(run("label", "--from", edited(2, activebayes_query="r9-q1-0123456789")), "task 2", "'r9-q1-0123456789'")
    assert_mistake(run("label", "--from", edited(3, activebayes_query="dark/dark1.png")), "task 3", "no query")
    assert_mistake(run("label", "--from", edited(4, activebayes_query=7)), "task 4", "activebayes_query 7")
    assert_mistake(run("label", "--from", edited(1, activebayes_key=keys[1])), "task 1", repr(keys[1]),
                   f"not the item of activebayes_query {first!r}")  # fmt: skip
    assert db_dump(cli_db) == before
    # the same tasks with their key as well (the key matches): recorded
    assert json.loads(ok("--json", "label", "--from", edited(1, activebayes_key=keys[0])).stdout)["round_answers"] == 4


def test_a_table_pool_keeps_its_keys(cli_db):
    """A pool that is no image folder names its items by key, as the page and the prompt do."""
    np.save("x.npy", np.random.default_rng(0).uniform(size=(6, 8, 8)).astype(np.float32))
    ok("init", "--name", "arr", "--classes", "2")
    ok("pool", "add", "x.npy")
    open_round(cli_db, "arr", ["4", "1"])
    summary = json.loads(ok("--json", "export", "--format", "label-studio", "--out", "tasks.json").stdout)
    assert summary["opaque_ids"] is False
    assert [t["data"]["activebayes_key"] for t in json.loads(Path("tasks.json").read_text())] == ["4", "1"]


# ---- the pure functions ------------------------------------------------------------------------------
def test_task_ids_parse_back_and_resolve_only_what_they_name():
    digest = hashlib.sha256(b"x").hexdigest()
    assert task_id(3, 0, digest) == f"r3-q1-{digest[:10]}" and parse_task_id(f" r3-q1-{digest[:10]} ") == (3, 0, digest[:10])
    for text in ("r0-q1-0123456789", "r1-q0-0123456789", "r1-q1-012345678", "r1-q1-0123456789a", "R1-q1-0123456789", "dark/x.png"):
        assert parse_task_id(text) is None, text
    tasks = [{"data": {"activebayes_query": "r1-q1-aaaaaaaaaa"}, "annotations": [{"result": [{"value": {"choices": ["dark"]}}]}]},
             {"data": {"activebayes_key": "light/l.png"}, "annotations": []}]  # fmt: skip
    names = {"r1-q1-aaaaaaaaaa": "dark/d.png"}
    assert answers_from_export(tasks, resolve=names.get) == [(1, "dark/d.png", "dark"), (2, "light/l.png", "")]
    with pytest.raises(DataError, match="task 1: activebayes_query 'r1-q1-aaaaaaaaaa' is no query"):
        answers_from_export(tasks)  # no way to resolve it: refused, not read as a key

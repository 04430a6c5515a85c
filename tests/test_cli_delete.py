"""`activebayes delete NAME`: a project and everything recorded for it go (its feature cache
too; the data file stays), refused without --yes while people's labels would go with it, and
the way out of an import that cannot be mended in place (classes differing only in case)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_checks import assert_mistake, db_dump, ok, run


def write_table(path: Path, labels: list[str]) -> None:
    path.write_text("id,x,label\n" + "".join(f"k{i},{i / 10:.2f},{label}\n" for i, label in enumerate(labels)))


def cache_files() -> list[Path]:
    return sorted(Path("activebayes-cache").glob("*.npy")) if Path("activebayes-cache").is_dir() else []


def test_a_class_typo_is_mended_by_delete_and_import_again(cli_db):
    write_table(Path("t.csv"), ["Yes", "yes", "no"] * 10)
    ok("init", "--name", "t")
    added = ok("pool", "add", "t.csv")
    said = " ".join(added.stdout.split())
    assert "differ only in case or spacing" in said and "`activebayes delete t`, `activebayes init --name t` and `pool add` again" in said
    ok("round", "--oracle", "truth", "--k", "3", "--epochs", "1", "--samples", "2", "--device", "cpu")  # simulated answers only
    made = cache_files()
    deleted = json.loads(ok("--json", "delete", "t").stdout)
    assert deleted == {"deleted": "t", "labels_lost": 0}
    assert made and not any(f.exists() for f in made) and Path("t.csv").exists()  # the cache goes, the data file stays
    write_table(Path("t.csv"), ["yes", "yes", "no"] * 10)
    ok("init", "--name", "t")
    assert "classes read from the labels: no, yes" in " ".join(ok("pool", "add", "t.csv").stdout.split())


def test_peoples_labels_are_kept_unless_yes(cli_db):
    write_table(Path("t.csv"), ["a", "b"] * 10)
    ok("init", "--name", "t")
    ok("init", "--name", "other")
    ok("--project", "t", "pool", "add", "t.csv")
    Path("answers.csv").write_text("key,label\nk1,a\nk2,b\n")
    ok("--project", "t", "label", "--from", "answers.csv")
    before = db_dump(cli_db)
    assert_mistake(run("delete", "t"), "project 't' holds 2 labels that people gave",
                   "`activebayes --project t export t-labels.csv`", "--yes")  # fmt: skip
    assert_mistake(run("delete", "nope"), "no project 'nope'", "'other', 't'")
    assert db_dump(cli_db) == before
    assert "Deleted project t and the 2 labels people gave" in " ".join(ok("delete", "t", "--yes").stdout.split())
    assert json.loads(ok("--json", "--project", "other", "status").stdout)["project"] == "other"  # the other project is untouched


def cache_left() -> list[str]:
    """Every file left in activebayes-cache/ (converted images, feature caches, text models)."""
    return sorted(p.name for p in Path("activebayes-cache").iterdir()) if Path("activebayes-cache").is_dir() else []


def test_an_image_folder_s_converted_file_goes_with_its_project_and_the_images_stay(cli_db):
    """`pool add FOLDER` converts the images into activebayes-cache/<name>-<random>.image-folder.npz;
    deleting the project deletes it with the feature cache, never an image. A project given that
    converted file as its pool keeps it until that project is deleted too."""
    import numpy as np
    from PIL import Image

    for label, level in (("dark", 40), ("light", 215)):
        Path("images", label).mkdir(parents=True)
        for i in range(3):
            Image.fromarray(np.full((8, 8), level + i, dtype=np.uint8)).save(Path("images", label, f"{label}{i}.png"))
    images = {p: p.read_bytes() for p in Path("images").rglob("*.png")}
    ok("init", "--name", "shapes", "--classes", "dark,light")
    converted = Path(json.loads(ok("--json", "pool", "add", "images", "--labels-from-folders").stdout)["converted"])
    assert converted.parent.name == "activebayes-cache" and converted.name.endswith(".image-folder.npz") and converted.is_file()
    ok("init", "--name", "again", "--classes", "dark,light")
    ok("--project", "again", "pool", "add", str(converted))  # the converted file as a pool of its own
    ok("delete", "again")
    assert converted.is_file()  # 'shapes' records it still
    ok("delete", "shapes")
    assert not converted.exists() and cache_left() == []
    assert {p: p.read_bytes() for p in Path("images").rglob("*.png")} == images  # the user's images are untouched


def test_a_text_column_s_model_goes_with_its_project(cli_db):
    words = ("quiet", "bright", "slow", "river", "engine", "paper")
    Path("r.csv").write_text("id,review,label\n" + "".join(f"r{i},the {words[i % 6]} {words[(i * 5) % 6]} ended,{'ab'[i % 2]}\n" for i in range(20)))
    ok("init", "--name", "r", "--classes", "a,b")
    ok("pool", "add", "r.csv", "--key-column", "id", "--text-column", "review")
    assert any(name.endswith(".text-model.npz") for name in cache_left())
    ok("delete", "r")
    assert cache_left() == [] and Path("r.csv").is_file()

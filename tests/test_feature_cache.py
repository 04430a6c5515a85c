"""Big tables parse once (`activebayes.data.feature_cache`): `pool add` writes the transformed
features to a checksummed .npy beside the database; every load memory-maps it and gets exactly
what parsing the file gives; a changed data file is refused; a missing, tampered or outdated cache
is rebuilt from the (checked) data file, never used as it is; two projects on one file keep their
own caches; an image folder's pixels are cached the same way. The csv reader behind it streams
the file into columns and reads back any row as written. SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import logging
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from cli_checks import assert_mistake, db_dump, ok, run

TINY = ("--epochs", "1", "--samples", "2", "--device", "cpu")


def write_table(path: Path, n: int = 80, *, seed: int = 0) -> Path:
    """key (text), two numbers (one with gaps: '', NA), a category with a gap (N/A), a quoted cell
    holding the separator and a line break, a blank line, and a label a/b."""
    rng = np.random.default_rng(seed)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\r\n")
        writer.writerow(["key", "age", "height", "colour", "note", "label"])
        for i in range(n):
            age = ("", "NA")[i % 2] if i % 9 == 4 else f"{30 + 10 * rng.normal():.2f}"
            colour = "N/A" if i % 13 == 6 else ("red", "green", "blue")[i % 3]
            note = ("plain", "with, comma", "two\nlines")[i % 3]
            writer.writerow([f"k{i:03d}", age, f" {170 + 5 * rng.normal():.3f} ", colour, note, "ab"[i % 2]])
            if i == 10:
                fh.write("\r\n")  # a blank record, skipped
    return path


def store_of(url: str):
    from activebayes.store import PoolStore

    return PoolStore(url, create=False)


def parse_path(info) -> object:
    """The project's features as parsing the data file gives them (no cache)."""
    from activebayes.data import load_dataset

    s = info.settings
    return load_dataset(info.data_path, label_column=s["label_column"], key_column=s["key_column"], features=s["features"])


def load(url: str, project: str):
    from activebayes.data import load_project_data

    with store_of(url) as store:
        return store.project(project), load_project_data(store, project)


@pytest.fixture
def db(cli_db):
    ok("init", "--name", "t")
    return cli_db


def cache_files(url: str, project: str = "t") -> tuple[Path, Path]:
    with store_of(url) as store:
        record = store.project(project).settings["feature_cache"]
    return Path(record["features"]["file"]), Path(record["rows"]["file"])


def test_pool_add_writes_the_cache_and_a_round_reads_it(db, tmp_path, monkeypatch):
    write_table(Path("p.csv"))
    ok("pool", "add", "p.csv", "--ignore", "note", "--test-fraction", "0.25")
    features, rows = cache_files(db)
    expected_folder = tmp_path / "activebayes-cache"  # next to the SQLite file; PostgreSQL: the current folder (here the same)
    assert features.parent == expected_folder and features.name.startswith("t-") and features.name.endswith(".features.npy")
    info, data = load(db, "t")
    record = info.settings["feature_cache"]
    assert record["data_sha256"] == info.data_sha256 and record["features"]["shape"] == [80, 7]
    assert isinstance(data.x, np.memmap) and data.x.dtype == np.float32
    parsed = parse_path(info)
    np.testing.assert_array_equal(np.asarray(data.x), parsed.x)  # exactly what parsing gives
    assert data.keys == parsed.keys and data.y.tolist() == parsed.y.tolist()
    assert (data.feature_names, data.categories, data.one_hot_columns, data.raw_columns) == (
        parsed.feature_names, parsed.categories, parsed.one_hot_columns, parsed.raw_columns)  # fmt: skip
    with Path("p.csv").open(newline="") as fh:
        written = [r for r in csv.reader(fh) if any(c.strip() for c in r)][1:]
    gaps = {"", "NA", "N/A"}
    for i in (0, 4, 6, 79):  # as written (a gap shown empty), read back by the row's byte offset
        assert data.raw[i].tolist() == ["" if c.strip() in gaps else c.strip() for c in written[i][1:4]]
    assert data.raw[[4, 0]].tolist() == [data.raw[4].tolist(), data.raw[0].tolist()]

    import activebayes.data.csv_table as csv_table
    import activebayes.data.loaders as loaders

    def no_parsing(*args, **kwargs):
        raise AssertionError("a round parsed the csv file")

    monkeypatch.setattr(csv_table, "read_csv_table", no_parsing)
    monkeypatch.setattr(loaders, "read_csv_table", no_parsing)
    ok("round", "--oracle", "truth", "--k", "4", *TINY)
    ok("round", "--k", "3", *TINY)  # a fit and a score from the cache
    with Path("t-round-2.csv").open(newline="") as fh:
        header, *lines = list(csv.reader(fh))
    assert header[4:] == ["age", "height", "colour"]
    by_key = {r[0]: r for r in written}
    for line in lines:
        assert line[4:] == ["" if c.strip() in gaps else c.strip() for c in by_key[line[0]][1:4]]


def test_a_changed_data_file_is_refused_and_nothing_written(db):
    write_table(Path("p.csv"))
    ok("pool", "add", "p.csv", "--ignore", "note")
    features, _ = cache_files(db)
    cached = features.read_bytes()
    Path("p.csv").write_text(Path("p.csv").read_text().replace("k003", "k999"))
    before = db_dump(db)
    refused = run("round", "--oracle", "truth", "--k", "3", *TINY)
    assert_mistake(refused, "p.csv", "changed since project 't' recorded it")
    assert db_dump(db) == before and features.read_bytes() == cached


@pytest.mark.parametrize("damage", ["tampered features", "missing features", "tampered rows"])
def test_a_damaged_cache_is_rebuilt_never_used(db, damage):
    write_table(Path("p.csv"))
    ok("pool", "add", "p.csv", "--ignore", "note")
    features, rows = cache_files(db)
    target = rows if damage == "tampered rows" else features
    original = target.read_bytes()
    if damage.startswith("missing"):
        target.unlink()
    else:  # the same size, features or keys changed: nothing but the checksum can tell
        broken = bytearray(original)
        broken[-40:] = bytes(40)
        target.write_bytes(bytes(broken))
    said = " ".join(ok("round", "--oracle", "truth", "--k", "3", *TINY).output.split())  # unwrapped
    assert said.count("rebuilt it from") == 1 and str(target.name) in said.replace(" ", ""), said  # one note, naming the file
    assert ("is missing" if damage.startswith("missing") else "changed since `pool add`") in said
    assert target.read_bytes() == original  # rebuilt byte for byte: its recorded sha256 holds again
    info, data = load(db, "t")
    np.testing.assert_array_equal(np.asarray(data.x), parse_path(info).x)
    assert "rebuilt" not in ok("round", "--oracle", "truth", "--k", "3", *TINY).output  # checked, then used as is


def test_library_load_rebuilds_with_a_logged_note(db, caplog):
    write_table(Path("p.csv"))
    ok("pool", "add", "p.csv", "--ignore", "note")
    features, _ = cache_files(db)
    array = np.load(features, mmap_mode="r+")
    array[:] = 7.0  # well-formed, plausible-looking, wrong
    array.flush()
    del array
    with caplog.at_level(logging.WARNING, logger="activebayes"):
        info, data = load(db, "t")
    assert [r.levelname for r in caplog.records] == ["WARNING"] and "rebuilt it from" in caplog.records[0].getMessage()
    assert not (np.asarray(data.x) == 7.0).all()
    np.testing.assert_array_equal(np.asarray(data.x), parse_path(info).x)


def test_a_changed_spec_invalidates_the_cache(db, caplog):
    """The record's spec sha256 ties the cache to the recorded feature spec: a spec that no
    longer matches is rebuilt from, never served by the old features."""
    from sqlalchemy import create_engine, update

    from activebayes.store.models import Project

    write_table(Path("p.csv"))
    ok("pool", "add", "p.csv", "--ignore", "note")
    info, _ = load(db, "t")
    settings = dict(info.settings)
    settings["features"]["columns"][0]["mean"] += 1.0  # the recorded age mean moves by 1
    engine = create_engine(db)
    with engine.begin() as conn:
        conn.execute(update(Project.__table__).where(Project.__table__.c.name == "t").values(settings=settings))
    engine.dispose()
    with caplog.at_level(logging.WARNING, logger="activebayes"):
        info, data = load(db, "t")
    assert "another data file or feature spec" in caplog.records[0].getMessage()
    np.testing.assert_array_equal(np.asarray(data.x), parse_path(info).x)
    assert data.x[0, 0] != pytest.approx(parse_path(info).x[0, 0] + 1.0)


def test_two_projects_on_one_file_keep_their_own_caches(db):
    write_table(Path("p.csv"))
    ok("init", "--name", "raw")
    ok("--project", "t", "pool", "add", "p.csv", "--ignore", "note")
    ok("--project", "raw", "pool", "add", "p.csv", "--ignore", "note", "--no-standardize")
    t_files, raw_files = cache_files(db, "t"), cache_files(db, "raw")
    assert not set(t_files) & set(raw_files)
    t_files[0].unlink()
    _, raw = load(db, "raw")
    assert isinstance(raw.x, np.memmap)  # the other project's cache untouched, used as is
    info_t, t = load(db, "t")
    info_raw, _ = load(db, "raw")
    np.testing.assert_array_equal(np.asarray(t.x), parse_path(info_t).x)
    np.testing.assert_array_equal(np.asarray(raw.x), parse_path(info_raw).x)
    assert not np.array_equal(np.asarray(t.x), np.asarray(raw.x))  # standardised and raw


def test_a_failed_pool_add_leaves_no_cache(db, monkeypatch):
    from activebayes.errors import StoreError
    from activebayes.store import PoolStore

    def refuse(*args, **kwargs):
        raise StoreError("import_pool: the database refused the import (a test)")

    write_table(Path("p.csv"))
    monkeypatch.setattr(PoolStore, "import_pool", refuse)  # after the cache is written
    before = db_dump(db)
    assert_mistake(run("pool", "add", "p.csv", "--ignore", "note"), "refused the import")
    assert db_dump(db) == before and list(Path("activebayes-cache").glob("*")) == []


def test_image_folder_pixels_are_cached(db, tmp_path):
    from PIL import Image

    from activebayes.data.images import load_image_pool

    for kind, value in (("dark", 40), ("light", 220)):
        (tmp_path / "imgs" / kind).mkdir(parents=True)
        for i in range(4):
            Image.fromarray(np.full((6, 5), value + i, dtype=np.uint8)).save(tmp_path / "imgs" / kind / f"{i}.png")
    ok("pool", "add", str(tmp_path / "imgs"), "--labels-from-folders")
    info, data = load(db, "t")
    record = info.settings["feature_cache"]
    assert record["rows"] is None and record["features"]["shape"] == [8, 1, 6, 5]
    assert isinstance(data.x, np.memmap) and data.folder == (tmp_path / "imgs").resolve()
    reference = load_image_pool(info.data_path)
    np.testing.assert_array_equal(np.asarray(data.x), reference.x)
    assert data.keys == reference.keys and data.y.tolist() == reference.y.tolist()
    Path(record["features"]["file"]).write_bytes(b"not an array")
    result = ok("round", "--oracle", "truth", "--k", "2", *TINY)
    assert "rebuilt it from" in " ".join(result.output.split())
    Image.fromarray(np.zeros((6, 5), dtype=np.uint8)).save(tmp_path / "imgs" / "dark" / "0.png")
    before = db_dump(db)
    assert_mistake(run("round", "--oracle", "truth", "--k", "2", *TINY), "changed since `pool add`", "0.png")
    assert db_dump(db) == before


def test_the_cache_files_are_the_bytes_np_save_writes(tmp_path, monkeypatch):
    """The cache's files are written in blocks (here of 3 rows, or 1, where the writer has blocks)
    with float64 features converted to float32 block by block: each file is np.save's of the
    converted array, and each sha256 recorded is the file's."""
    import activebayes.data.feature_cache as feature_cache
    from activebayes.data.dataset import sha256_file

    class Pool(SimpleNamespace):  # what the writer reads of a csv pool's Dataset
        def __len__(self) -> int:
            return len(self.x)

    x = np.random.default_rng(0).normal(size=(10, 4))
    offsets = np.arange(10) * 17
    rows = np.zeros(10, dtype=[("key", "<U3"), ("label", "<U2"), ("offset", "<i8")])
    rows["key"], rows["label"], rows["offset"] = [f"k{i}" for i in range(10)], ["a", "bb"] * 5, offsets
    for n in (10, 0):
        pool = Pool(format="csv", x=x[:n], keys=rows["key"][:n], y=rows["label"][:n], raw=SimpleNamespace(offsets=offsets[:n]))
        for name, array in (("features", x[:n].astype(np.float32)), ("rows", rows[:n])):
            np.save(tmp_path / f"expected-{name}.npy", array)
        for block in (48, 1):
            monkeypatch.setattr(feature_cache, "_CHUNK_BYTES", block, raising=False)
            digests = feature_cache._write_files(pool, tmp_path / "features.npy", tmp_path / "rows.npy")
            for name, digest in zip(("features", "rows"), digests):
                written = tmp_path / f"{name}.npy"
                assert written.read_bytes() == (tmp_path / f"expected-{name}.npy").read_bytes() and digest == sha256_file(written)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["expected-features.npy", "expected-rows.npy", "features.npy", "rows.npy"]  # no partial file


# ---- the reader behind it -------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["crlf", "bom", "lone cr", "utf-16", "semicolon"])
def test_streamed_columns_equal_the_csv_module(tmp_path, layout):
    from activebayes.data.csv_table import read_csv_table, read_records

    rows = [["id", "x", "c", "t"]] + [[f"r{i}", f"{i * 0.5:g}" if i % 5 else "", ("a", "b")[i % 2], ("x; y", "é\nz", "w")[i % 3]] for i in range(40)]
    delimiter = ";" if layout == "semicolon" else ","
    buffer = __import__("io").StringIO()
    lone_cr = {"lineterminator": "\r", "quoting": csv.QUOTE_ALL}  # a cell's "\n" is quoted only when the line ends differently
    csv.writer(buffer, delimiter=delimiter, **(lone_cr if layout == "lone cr" else {"lineterminator": "\r\n"})).writerows(rows)
    text = buffer.getvalue()
    path = tmp_path / "t.csv"
    if layout == "utf-16":
        path.write_bytes(text.encode("utf-16"))
    else:
        path.write_bytes((b"\xef\xbb\xbf" if layout == "bom" else b"") + text.encode("utf-8"))
    table = read_csv_table(path, text_columns=("id", "t"))
    assert table.header == rows[0] and len(table) == 40 and table.delimiter == delimiter
    for j, name in enumerate(rows[0]):
        assert table.column(name) == [r[j] for r in rows[1:]], name
    assert np.isnan(table.numbers("x")[0]) and table.numbers("x")[3] == 1.5
    streamed = layout in ("crlf", "bom", "semicolon")
    assert (table.offsets is not None) == streamed  # a lone CR or UTF-16: rows are found by reading the file through
    assert read_records(path, table.offsets, [39, 2], delimiter=delimiter) == [rows[40], rows[3]]


def test_a_number_spelled_as_a_gap_is_missing_exactly(tmp_path):
    from activebayes.data.csv_table import read_csv_table
    from activebayes.data.table_gaps import column_missing, missing_mask

    cells = ["1.5", "-999", "-999.0", "NA", " -999 ", "2"]
    path = tmp_path / "g.csv"
    path.write_text("v\n" + "\n".join(cells) + "\n")
    table = read_csv_table(path)
    expected = missing_mask([c.strip() for c in cells], ["-999"])
    assert column_missing(table, "v", ["-999"]).tolist() == expected.tolist() == [False, True, False, True, True, False]


def test_reader_errors_name_the_line(tmp_path):
    from activebayes.data.csv_table import read_csv_table
    from activebayes.errors import DataError

    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3\n")
    with pytest.raises(DataError, match=r"line 3: expected 2 fields, got 1"):
        read_csv_table(bad)
    bad.write_bytes(b"a,b\n1,2\n3,\x81\n")
    with pytest.raises(DataError, match=r"neither UTF-8 nor Windows-1252 text \(byte 0x81 at offset 10, line 3\)"):
        read_csv_table(bad)
    bad.write_bytes(b"a,b\n1,2\n3,\x004\n")
    with pytest.raises(DataError, match=r"line 3: holds a NUL byte"):
        read_csv_table(bad)

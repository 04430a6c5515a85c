"""activebayes.data: npy/npz/csv/IDX loading, validation errors, sha256, the bundled digits."""

from __future__ import annotations

import gzip
import hashlib
import struct
from pathlib import Path

import numpy as np
import pytest

from activebayes.data import (
    detect_format,
    digits_arrays,
    load_dataset,
    load_labels,
    read_idx,
    sha256_file,
    write_digits,
)
from activebayes.errors import DataError

MNIST_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"


def _write_idx(path: Path, arr: np.ndarray, code: int = 0x08) -> Path:
    header = struct.pack(">BBBB", 0, 0, code, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    payload = header + arr.astype(arr.dtype.newbyteorder(">")).tobytes()
    if path.suffix == ".gz":
        with gzip.open(path, "wb") as fh:
            fh.write(payload)
    else:
        path.write_bytes(payload)
    return path


def test_npy_is_memory_mapped(tmp_path):
    x = np.random.default_rng(0).normal(size=(20, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    data = load_dataset(tmp_path / "x.npy")
    assert isinstance(data.x, np.memmap) and data.format == "npy" and len(data) == 20
    np.testing.assert_array_equal(data.x, x)
    assert data.y is None and data.keys is None


def test_npz_with_labels_and_keys(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(path, x=np.ones((3, 2)), y=np.array([0, 1, 1]), keys=np.array(["a", "b", "c"]))
    data = load_dataset(path, classes=[0, 1])
    assert data.y.tolist() == [0, 1, 1] and data.keys == ["a", "b", "c"]
    with pytest.raises(DataError, match=r"row 1 has label 1, not one of the classes"):
        load_dataset(path, classes=["0", "2"])
    np.savez(tmp_path / "bad.npz", features=np.ones((3, 2)))
    with pytest.raises(DataError, match="expected an array named 'x'"):
        load_dataset(tmp_path / "bad.npz")


def test_csv_label_and_key_columns(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("id,a,b,label\nr1,1.5,2,cat\nr2,-1,0.25,dog\n")
    data = load_dataset(path, label_column="label", key_column="id", classes=["cat", "dog"])
    np.testing.assert_array_equal(data.x, np.array([[1.5, 2.0], [-1.0, 0.25]], dtype=np.float32))
    assert data.y.tolist() == ["cat", "dog"] and data.keys == ["r1", "r2"]
    with pytest.raises(DataError, match="row 1 has label 'dog'"):
        load_dataset(path, label_column="label", key_column="id", classes=["cat"])
    with pytest.raises(DataError, match="label_column 'y' is not a column"):
        load_dataset(path, label_column="y")


def test_csv_saved_with_a_byte_order_mark(tmp_path):
    """Excel's "CSV UTF-8" starts the file with a BOM: the first column is still called "id"."""
    path = tmp_path / "bom.csv"
    path.write_bytes("id,a,label\nr1,1.5,cat\nr2,-1,dog\n".encode("utf-8-sig"))
    data = load_dataset(path, label_column="label", key_column="id", classes=["cat", "dog"])
    assert data.keys == ["r1", "r2"] and data.y.tolist() == ["cat", "dog"]
    assert load_labels(path, label_column="label", key_column="id").keys == ["r1", "r2"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("a,b\n1,2\n3\n", "line 3: expected 2 fields, got 1"),
        ("a,b\n1,2\n3,x\n", "line 3: column 'b' is not a number"),
        ("a,b\n1,nan\n", "line 2: column 'b' has no value"),
        ("a,b\n1,inf\n", "line 2: a feature is infinite"),
        ("", "empty"),
    ],
)
def test_csv_errors_name_the_line(tmp_path, body, message):
    path = tmp_path / "bad.csv"
    path.write_text(body)
    with pytest.raises(DataError, match=message):
        load_dataset(path)


def test_nan_in_array_file_names_the_row(tmp_path):
    x = np.zeros((5, 2), dtype=np.float32)
    x[3, 1] = np.inf
    np.save(tmp_path / "x.npy", x)
    with pytest.raises(DataError, match="row 3 has a NaN or infinite feature"):
        load_dataset(tmp_path / "x.npy")


def test_unknown_format_and_missing_file(tmp_path):
    (tmp_path / "x.parquet").write_bytes(b"1")
    with pytest.raises(DataError, match=r"'.*x.parquet' is Parquet, .* pandas.read_parquet\('x.parquet'\).to_csv\('x.csv', index=False\)"):
        load_dataset(tmp_path / "x.parquet")
    (tmp_path / "x.bin").write_bytes(b"1")
    with pytest.raises(DataError, match="unknown format"):
        load_dataset(tmp_path / "x.bin")
    (tmp_path / "cat.JPG").write_bytes(b"1")  # one picture: the folder of them is the pool
    with pytest.raises(DataError, match="'.*cat.JPG' is one image; give the folder that holds the pool's images"):
        load_dataset(tmp_path / "cat.JPG")
    with pytest.raises(DataError, match="does not exist"):
        load_dataset(tmp_path / "nope.npy")
    with pytest.raises(DataError, match="format: expected one of"):
        load_dataset(tmp_path / "x.parquet", format="parquet")
    (tmp_path / "book.xlsx").write_bytes(b"PK\x03\x04")
    with pytest.raises(DataError, match=r"'.*book.xlsx' is a spreadsheet workbook; save its sheet as 'CSV UTF-8' and add that file"):
        load_dataset(tmp_path / "book.xlsx")


@pytest.mark.parametrize(
    "name, words",
    [("t.jsonl", "JSON lines, which pool add does not read; write it as CSV (in Python: pandas.read_json('t.jsonl', lines=True)"),
     ("t.feather", "Feather/Arrow"), ("t.rds", "in R: write.csv(readRDS('t.rds'), 't.csv', row.names = FALSE)"),
     ("t.dta", "pandas.read_stata"), ("t.sav", "pandas.read_spss"), ("t.sql", "a database dump")],
)  # fmt: skip
def test_tables_of_other_tools_are_refused_with_the_way_to_csv(tmp_path, name, words):
    (tmp_path / name).write_bytes(b"1")
    with pytest.raises(DataError) as caught:
        load_dataset(tmp_path / name)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_compressed_table_is_refused_with_the_way_out(tmp_path):
    import gzip

    (tmp_path / "t.csv.gz").write_bytes(gzip.compress(b"a,label\n1,x\n"))
    with pytest.raises(DataError, match=r"'.*t.csv.gz' is compressed; decompress it \(gunzip\) and add the csv file"):
        load_dataset(tmp_path / "t.csv.gz")


def test_tab_separated_txt_and_tsv_files_are_tables(tmp_path):
    for name in ("t.tsv", "t.txt"):
        (tmp_path / name).write_text("a\tb\tlabel\n1\t2.5\tx\n3\t4.5\ty\n")
        data = load_dataset(tmp_path / name, label_column="label")
        assert data.format == "csv" and data.x.tolist() == [[1, 2.5], [3, 4.5]] and data.y.tolist() == ["x", "y"]


@pytest.mark.parametrize("name", ["imgs-idx3-ubyte", "imgs-idx3-ubyte.gz"])
def test_idx_images_flat_and_chw(tmp_path, name):
    images = np.arange(3 * 4 * 4, dtype=np.uint8).reshape(3, 4, 4) * 5
    path = _write_idx(tmp_path / name, images)
    assert detect_format(path) == "idx"
    flat = load_dataset(path)
    assert flat.x.shape == (3, 16) and flat.x.dtype == np.float32
    np.testing.assert_allclose(flat.x, images.reshape(3, 16) / 255.0)
    chw = load_dataset(path, image_layout="chw")
    assert chw.x.shape == (3, 1, 4, 4)
    labels = _write_idx(tmp_path / "l-idx1-ubyte", np.array([7, 0, 3], dtype=np.uint8))
    assert load_labels(labels).y.tolist() == [7, 0, 3]
    ints = _write_idx(tmp_path / "i-idx1-ubyte", np.array([-5, 70000], dtype=np.int32), code=0x0C)
    assert read_idx(ints).tolist() == [-5, 70000]


def test_idx_corrupt(tmp_path):
    (tmp_path / "x-idx3-ubyte").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(DataError, match="bad magic"):
        load_dataset(tmp_path / "x-idx3-ubyte")
    path = _write_idx(tmp_path / "y-idx3-ubyte", np.zeros((2, 2, 2), dtype=np.uint8))
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(DataError, match="IDX header says shape"):
        load_dataset(path)


def test_real_mnist_test_images():
    images = MNIST_DIR / "t10k-images-idx3-ubyte.gz"
    if not images.exists():
        pytest.skip(f"MNIST not found at {MNIST_DIR}")
    data = load_dataset(images, image_layout="chw")
    assert data.x.shape == (10_000, 1, 28, 28) and 0.0 <= data.x.min() and data.x.max() <= 1.0
    labels = load_labels(MNIST_DIR / "t10k-labels-idx1-ubyte.gz").y
    assert labels.shape == (10_000,) and set(labels.tolist()) == set(range(10))


def test_sha256_is_streamed_and_correct(tmp_path):
    path = tmp_path / "blob.bin"
    payload = np.random.default_rng(1).bytes(3 * 1024 + 17)
    path.write_bytes(payload)
    assert sha256_file(path, chunk_size=1000) == hashlib.sha256(payload).hexdigest()
    with pytest.raises(DataError, match="does not exist"):
        sha256_file(tmp_path / "none")


def test_bundled_digits_npz_and_csv(tmp_path):
    x, y = digits_arrays()
    assert x.shape == (1797, 64) and y.shape == (1797,) and set(y.tolist()) == set(range(10))
    assert 0.0 <= x.min() and x.max() <= 1.0
    npz = load_dataset(write_digits(tmp_path / "digits.npz"), classes=range(10))
    np.testing.assert_array_equal(npz.x, x)
    assert npz.y.tolist() == y.tolist() and npz.keys[:2] == ["digit-0000", "digit-0001"]
    csv = load_dataset(write_digits(tmp_path / "digits.csv"), label_column="label", key_column="key", classes=range(10))
    np.testing.assert_allclose(csv.x, x, atol=5e-4)
    assert csv.y.tolist() == [str(v) for v in y.tolist()] and csv.keys == npz.keys
    with pytest.raises(DataError, match="already exists"):
        write_digits(tmp_path / "digits.npz")
    with pytest.raises(DataError, match="expected 'npz' or 'csv'"):
        write_digits(tmp_path / "digits.txt")


def test_labels_csv(tmp_path):
    path = tmp_path / "truth.csv"
    path.write_text("key,label\na,1\nb,0\n")
    data = load_labels(path)
    assert data.keys == ["a", "b"] and data.y.tolist() == ["1", "0"]
    path.write_text("key,label\na,1,9\n")
    with pytest.raises(DataError, match="line 2: expected 2 fields"):
        load_labels(path)


def test_labels_that_are_no_class_at_all_point_at_the_classes():
    """One label outside the classes is a typo to correct; when no label is a class (classes 0..2
    from `init --classes 3`, labels named), it is the project's classes that are wrong."""
    from activebayes.data.dataset import check_labels

    with pytest.raises(DataError, match=r"row 1 has label 'dgo', not one of the classes \['cat', 'dog'\]; correct the label$"):
        check_labels(np.asarray(["cat", "dgo"]), ["cat", "dog"], Path("a.csv"))
    with pytest.raises(DataError, match=r"row 0 has label 'setosa' \(line 2\), not one of the classes \['0', '1', '2'\], and no label of the "
                                         r"file is one; add the file to a project with those classes \(init --name NAME --classes "
                                         r"setosa,versicolor,virginica\), or to one made without --classes"):  # fmt: skip
        check_labels(np.asarray(["setosa", "virginica", "versicolor"]), range(3), Path("iris.csv"), [2, 3, 4])


def test_float_labels_are_compared_as_the_store_keeps_them():
    """Labels 1.0 and 0.0 are the classes 1 and 0; only 5.0 is outside them: a typo, not wrong classes."""
    from activebayes.data.dataset import check_labels

    with pytest.raises(DataError, match=r"row 2 has label 5.0, not one of the classes \['0', '1', '2'\]; correct the label$"):
        check_labels(np.asarray([1.0, 0.0, 5.0]), range(3), Path("f.csv"))
    with pytest.raises(DataError, match=r"\(init --name NAME --classes naming them\)"):  # a comma in a label: no exact command to give
        check_labels(np.asarray(["a,b", "c"]), range(3), Path("f.csv"))


@pytest.mark.parametrize(("label", "hinted"), [("3,5", True), ("1.234,50", True), ("12,50 €", True), ("1,234", False), ("n/a", False)])
def test_a_regression_label_only_a_decimal_comma_explains_gets_the_hint(label, hinted):
    """The hint is the one rule of `surely_decimal_comma`: "1,234" may be thousands, so no hint."""
    from activebayes.data.dataset import check_labels

    with pytest.raises(DataError, match="not a finite number") as caught:
        check_labels(np.asarray(["1.5", label]), None, Path("y.csv"), numeric=True)
    assert ("decimal comma is read only" in str(caught.value)) is hinted
    assert ("create a classification project" in str(caught.value)) is not hinted  # else: classes, or another column


def test_a_class_as_a_regression_label_names_the_ways_on():
    from activebayes.data.dataset import check_labels

    with pytest.raises(DataError, match="label 'setosa'.* not a finite number") as caught:
        check_labels(np.asarray(["setosa", "virginica"]), None, Path("iris.csv"), numeric=True)
    assert "name a column of numbers with --label-column" in str(caught.value)
    assert "`activebayes init --name NAME` without --task regression" in str(caught.value)

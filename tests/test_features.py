"""Tabular features (activebayes.data.features and the csv loader's text columns) and the sized
training rule (activebayes.training.sized_training), checked by their values."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from activebayes.data import fit_features, load_dataset, natural_sorted, one_hot, standardize, standardize_stats
from activebayes.errors import ConfigError, DataError
from activebayes.training import sized_training


def test_natural_order():
    assert natural_sorted(["10", "2", "1", "2"]) == ["1", "2", "10"]
    assert natural_sorted(["class10", "class2", "Class1"]) == ["Class1", "class2", "class10"]
    assert natural_sorted(["virginica", "setosa", "versicolor"]) == ["setosa", "versicolor", "virginica"]


def test_standardize_maths():
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 2.0, size=(200, 3)).astype(np.float32)
    x[:, 2] = 7.0  # a constant column maps to 0, not NaN
    mean, scale = standardize_stats(x)
    assert mean == pytest.approx(x.astype(np.float64).mean(axis=0))
    assert scale[:2] == pytest.approx(x[:, :2].astype(np.float64).std(axis=0))
    assert scale[2] == 1.0
    z = standardize(x, mean, scale)
    assert z.dtype == np.float32
    assert z[:, :2].mean(axis=0) == pytest.approx([0, 0], abs=1e-5)
    assert z[:, :2].std(axis=0) == pytest.approx([1, 1], abs=1e-5)
    assert np.all(z[:, 2] == 0)
    mean, scale = standardize_stats(x, skip=[0])
    assert (mean[0], scale[0]) == (0.0, 1.0)


def test_one_hot_and_unseen_category():
    assert one_hot(["b", "a", "b"], ["a", "b"], column="c").tolist() == [[0, 1], [1, 0], [0, 1]]
    with pytest.raises(DataError, match=r"row 1: column 'c' has the category 'z', not seen .* \(known: a, b\)"):
        one_hot(["a", "z"], ["a", "b"], column="c")


def write(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join(rows) + "\n")
    return path


def test_csv_text_columns(tmp_path):
    f = write(tmp_path / "t.csv", ["x,colour,label", "1.5,red,a", "2.5,blue,b", "3.5,red,a"])
    with pytest.raises(DataError, match="line 2: column 'colour' is not a number"):
        load_dataset(f, label_column="label")  # categorical="error" is the library default
    data = load_dataset(f, label_column="label", categorical="auto")
    assert data.feature_names == ["x", "colour=blue", "colour=red"]
    assert data.categories == {"colour": ["blue", "red"]} and data.one_hot_columns == (1, 2)
    assert data.x.tolist() == [[1.5, 0, 1], [2.5, 1, 0], [3.5, 0, 1]]

    spec = fit_features(data.x, categories=data.categories, one_hot_columns=data.one_hot_columns)
    assert spec["mean"] == pytest.approx([2.5, 0, 0]) and spec["scale"] == pytest.approx([math.sqrt(2 / 3), 1, 1])
    loaded = load_dataset(f, label_column="label", features=spec)
    assert loaded.raw.tolist() == [["1.5", "red"], ["2.5", "blue"], ["3.5", "red"]]  # as in the file
    assert loaded.raw_columns == ["x", "colour"]
    assert loaded.x[:, 0] == pytest.approx([-math.sqrt(1.5), 0, math.sqrt(1.5)], rel=1e-6)
    assert loaded.x[:, 1:].tolist() == data.x[:, 1:].tolist()  # indicators are left as 0/1

    other = write(tmp_path / "o.csv", ["x,colour,label", "1.5,green,a"])  # the recorded encoding, a new file
    with pytest.raises(DataError, match="'colour' has the category 'green', not seen"):
        load_dataset(other, label_column="label", features=spec)


def test_csv_column_mixing_numbers_and_text_is_refused(tmp_path):
    f = write(tmp_path / "m.csv", ["x,y", "1,2", "abc,3"])
    with pytest.raises(DataError, match=r"line 3: column 'x' is not a number \('abc'\) but line 2 holds the number '1'.*--na-values"):
        load_dataset(f, categorical="auto")
    with pytest.raises(DataError, match="categorical: expected 'auto', 'error' or 'force'"):
        load_dataset(f, categorical="maybe")
    gap = write(tmp_path / "g.csv", ["x,y", "1,2", "n/a,3"])  # n/a marks a gap, which the library refuses by default
    with pytest.raises(DataError, match=r"line 3: column 'x' has no value \('n/a'\); fill it in, or pass --missing impute"):
        load_dataset(gap)


@pytest.mark.parametrize(
    "n, epochs, steps",
    [(1, 500, 500), (10, 500, 500), (45, 500, 500), (64, 500, 500), (65, 250, 500), (200, 125, 500), (700, 50, 550)],
)
def test_sized_training_rule(n, epochs, steps):
    """epochs = max(50, ceil(500 / ceil(n / 64))), weight decay = 1 / n."""
    record = sized_training(n)
    assert (record["epochs"], record["steps"]) == (epochs, steps)
    assert record["weight_decay"] == pytest.approx(1.0 / n)
    assert record["rule"] == "min-steps" and record["labelled"] == n


def test_sized_training_keeps_explicit_epochs():
    record = sized_training(45, epochs=3, prior_precision=2.0, batch_size=10)
    assert (record["rule"], record["epochs"], record["steps"]) == ("explicit-epochs", 3, 15)
    assert record["weight_decay"] == pytest.approx(2.0 / 45)
    with pytest.raises(ConfigError):
        sized_training(0)


def test_cli_default_training_is_sized_to_each_fit(monkeypatch):
    """The CLI's factory sizes epochs and weight decay to the items of each fit."""
    import torch

    from activebayes.nets import mlp
    from activebayes.posteriors.mc_dropout import MCDropout
    from activebayes_cli._model import posterior_factory

    seen = []
    monkeypatch.setattr(MCDropout, "fit", lambda self, x, y: seen.append((self.train.epochs, self.train.weight_decay, len(x))) or self)
    factory, settings = posterior_factory("mc-dropout", mlp(2, 2), samples=None, epochs=None, device="cpu", labelled=10)
    assert settings["training"]["epochs"] == 500 and settings["training"]["weight_decay"] == pytest.approx(0.1)
    for n in (10, 200):
        factory(seed=0).fit(torch.zeros(n, 2), torch.zeros(n, dtype=torch.long))
    assert seen == [(500, pytest.approx(0.1), 10), (125, pytest.approx(0.005), 200)]
    factory, settings = posterior_factory("mc-dropout", mlp(2, 2), samples=None, epochs=7, device="cpu", labelled=10)
    factory(seed=0).fit(torch.zeros(10, 2), torch.zeros(10, dtype=torch.long))
    assert seen[-1] == (7, pytest.approx(0.1), 10) and settings["epochs"] == 7

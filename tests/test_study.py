"""`activebayes study run` and activebayes.study: a tiny digits study end to end, determinism,
resuming, the balanced initial set, the summary statistics, and every config mistake."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from activebayes.errors import ConfigError, DataError
from activebayes.study import StudyConfig, initial_rows, prepare_data, run_study, summarise_curves
from activebayes_cli.main import app
from cli_checks import assert_mistake

ROOT = Path(__file__).resolve().parents[1]
DIGITS_TOML = ROOT / "studies" / "gal2017" / "digits.toml"
MNIST_DIR = ROOT.parent / "shared" / "data" / "mnist"


def run(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def initial_keys(db: Path) -> dict[str, set[str]]:
    """project -> keys labelled at import in the pool split (the initial set)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT p.name, i.key FROM observations o JOIN items i ON i.id = o.item_id "
            "JOIN projects p ON p.id = i.project_id WHERE o.source = 'import' AND i.split = 'pool'"
        ).fetchall()
    out: dict[str, set[str]] = {}
    for name, key in rows:
        out.setdefault(name, set()).add(key)
    return out


class Interrupt(Exception):
    pass


def test_digits_study_end_to_end_deterministic_and_resumable(tmp_path):
    first = tmp_path / "a"
    result = run("study", "run", str(DIGITS_TOML), "--out", str(first))
    assert result.exit_code == 0, result.output
    assert "labels" in result.stdout and "bald" in result.stdout and "random" in result.stdout
    said = " ".join(result.stdout.split())  # a long path wraps
    assert "(mc-dropout, 2 repeats)" in said and "(12 rounds run now," in said and "(s)" not in said
    doc = json.loads((first / "results.json").read_text())
    assert doc["config"]["name"] == "digits-tiny" and doc["config"]["acquisitions"] == ["bald", "random"]
    assert set(doc["curves"]) == {"bald", "random"}
    for name, points in doc["curves"].items():
        assert [p["labels"] for p in points] == [20, 30, 40]
        runs = doc["runs"][name]
        assert len(runs) == 2
        for i, p in enumerate(points):  # mean and sd (ddof=1) of the two repeats' accuracies
            values = [run_[i][1] for run_ in runs]
            assert p["n"] == 2 and 0.0 <= p["mean"] <= 1.0
            assert p["mean"] == pytest.approx(np.mean(values)) and p["sd"] == pytest.approx(np.std(values, ddof=1))
    # Within a repeat every acquisition starts from the same labels and the same round-1 seed.
    for r in range(2):
        assert doc["runs"]["bald"][r][0] == doc["runs"]["random"][r][0]
    png = first / "learning-curve.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keys = initial_keys(first / "study.db")
    assert keys["bald-r1"] == keys["random-r1"] and keys["bald-r2"] == keys["random-r2"]
    assert keys["bald-r1"] != keys["bald-r2"]
    from activebayes.data import digits_arrays

    _, digit_labels = digits_arrays()
    for chosen in keys.values():  # 20 balanced: two of each digit
        assert Counter(int(digit_labels[int(k.split("-")[1])]) for k in chosen) == {c: 2 for c in range(10)}

    # The same seed, interrupted after 5 rounds and resumed, gives identical curves.
    second = tmp_path / "b"
    config = StudyConfig.from_toml(DIGITS_TOML)

    def stop(done, total, text):
        if done == 5:
            raise Interrupt

    with pytest.raises(Interrupt):
        run_study(config, second, progress=stop)
    resumed = run("--json", "study", "run", str(DIGITS_TOML), "--out", str(second))
    assert resumed.exit_code == 0, resumed.output
    summary = json.loads(resumed.stdout)
    assert summary["rounds_run"] == 12 - 5
    assert summary["curves"] == doc["curves"]
    assert json.loads((second / "results.json").read_text())["runs"] == doc["runs"]

    # Resuming a finished study adds nothing.
    with sqlite3.connect(first / "study.db") as conn:
        before = conn.execute("SELECT count(*) FROM rounds").fetchone()[0]
    again = run("--json", "study", "run", str(DIGITS_TOML), "--out", str(first))
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["rounds_run"] == 0
    with sqlite3.connect(first / "study.db") as conn:
        assert conn.execute("SELECT count(*) FROM rounds").fetchone()[0] == before == 12
    assert json.loads((first / "results.json").read_text())["curves"] == doc["curves"]


def test_resume_with_another_config_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "study-config.json").write_text(json.dumps({"name": "something else"}))
    assert_mistake(run("study", "run", str(DIGITS_TOML), "--out", str(out)), "different config", "give another --out")
    assert sorted(p.name for p in out.iterdir()) == ["study-config.json"]


BASE = DIGITS_TOML.read_text()


@pytest.mark.parametrize(
    "text, words",
    [
        ("name = [", ["not valid TOML"]),
        (BASE + "\ncolour = 3\n", ["colour: unknown key"]),
        (BASE.replace("batch_size = 10", "batch_size = 10\nbatchsize = 3"), ["loop.batchsize: unknown key"]),
        (BASE.replace('["bald", "random"]', '["bald", "maximum-fun"]'), ["acquisition", "maximum-fun"]),
        (BASE.replace('"mc-dropout"', '"dropout-magic"'), ["model.posterior", "dropout-magic"]),
        (BASE.replace('"mc-dropout"', '"gp"'), ["model.posterior", "model_fn"]),
        (BASE.replace("batch_size = 10", "batch_size = 0"), ["loop.batch_size", "positive integer"]),
        (BASE.replace("max_labels = 40", "max_labels = 20"), ["loop.max_labels"]),
        (BASE.replace("balanced_initial = true", "balanced_initial = 1"), ["loop.balanced_initial"]),
        (BASE.replace('network = "mlp"', 'network = "cnn"'), ["model.network", "cnn"]),
        (BASE.replace('dataset = "digits"', 'dataset = "mnist"\npath = "no/such/folder"'), ["data.path", "does not exist"]),
        (BASE.replace('acquisitions = ["bald", "random"]', ""), ["acquisitions: missing"]),
        (BASE.replace('posterior = "mc-dropout"', 'posterior = "mc-dropout"\noptions = { colour = 1 }'),
         ["model.options.colour", "not an option of 'mc-dropout'", "prefix_cache"]),
        (BASE.replace('posterior = "mc-dropout"', 'posterior = "snapshot-ensemble"\noptions = { epochs_per_cycle = 0 }'),
         ["model.options.epochs_per_cycle"]),
        (BASE.replace('posterior = "mc-dropout"', 'posterior = "mc-dropout"\noptions = 3'), ["model.options", "a table"]),
        (BASE.replace("repeats = 2", "repeats = 1000000000"), ["repeats: expected at most 1000"]),
    ],
)
def test_config_mistakes_exit_2_with_one_line_and_write_nothing(tmp_path, text, words):
    config = tmp_path / "study.toml"
    config.write_text(text)
    out = tmp_path / "out"
    assert_mistake(run("study", "run", str(config), "--out", str(out)), *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["study.toml"]


def test_missing_config_file_and_bad_device(tmp_path):
    assert_mistake(run("study", "run", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "o")), "does not exist")
    assert_mistake(run("study", "run", str(DIGITS_TOML), "--out", str(tmp_path / "o"), "--device", "tpu"), "tpu")
    assert list(tmp_path.iterdir()) == []


def test_initial_rows_balanced_and_seeded():
    labels = np.repeat(np.arange(10), 30)
    pool = np.arange(0, 300, 2)  # 15 of each class
    rows = initial_rows(pool, labels, 23, balanced=True, rng=np.random.default_rng(3))
    counts = Counter(labels[rows].tolist())
    assert sorted(counts.values()) == [2] * 7 + [3] * 3  # 23 = 10 * 2 + 3 extra
    assert set(rows) <= set(pool) and len(set(rows)) == 23
    again = initial_rows(pool, labels, 23, balanced=True, rng=np.random.default_rng(3))
    assert np.array_equal(rows, again)
    plain = initial_rows(pool, labels, 23, balanced=False, rng=np.random.default_rng(3))
    assert len(set(plain)) == 23 and set(plain) <= set(pool)
    with pytest.raises(DataError, match="class"):
        initial_rows(pool[:12], labels, 20, balanced=True, rng=np.random.default_rng(0))


def test_summarise_curves_hand_computed():
    runs = [[(20, 0.5), (30, 0.7)], [(20, 0.7), (30, 0.9), (40, 1.0)]]
    out = summarise_curves(runs)
    assert [p["labels"] for p in out] == [20, 30]  # only the label counts both runs reached
    assert out[0]["mean"] == pytest.approx(0.6) and out[0]["sd"] == pytest.approx(np.sqrt(0.02))
    assert summarise_curves([[(20, 0.4)]]) == [{"labels": 20, "mean": 0.4, "sd": 0.0, "n": 1}]


def test_config_errors_name_the_key():
    with pytest.raises(ConfigError, match="model.epochs"):
        StudyConfig.from_dict({"acquisitions": ["bald"], "model": {"epochs": -1}})
    with pytest.raises(ConfigError, match=r"\[loop\]: expected a table"):
        StudyConfig.from_dict({"acquisitions": ["bald"], "loop": 3})
    assert StudyConfig.from_dict({"acquisitions": ["BALD", "mean_std"]}).acquisitions == ("bald", "mean-std")


def test_gal2017_configs_resolve_the_shared_mnist_folder():
    if not MNIST_DIR.is_dir():
        pytest.skip(f"MNIST not found at {MNIST_DIR}")
    config = StudyConfig.from_toml(ROOT / "studies" / "gal2017" / "mnist.toml")
    assert Path(config.data_path) == MNIST_DIR.resolve()  # data paths are relative to the config file
    assert config.acquisitions == ("bald", "variation-ratio", "entropy", "mean-std", "random")
    assert (config.initial, config.batch_size, config.max_labels, config.repeats) == (20, 10, 1000, 3)
    assert config.rounds_per_run == 99  # 20, 30, ..., 1000 labels
    small = StudyConfig.from_toml(ROOT / "studies" / "gal2017" / "mnist-small.toml")
    assert Path(small.data_path) == MNIST_DIR.resolve() and small.network == "cnn"


def test_mnist_data_file(tmp_path):
    if not MNIST_DIR.is_dir():
        pytest.skip(f"MNIST not found at {MNIST_DIR}")
    config = StudyConfig.from_dict(
        {"acquisitions": ["bald"], "repeats": 2, "data": {"dataset": "mnist", "path": str(MNIST_DIR), "pool_size": 100,
                                                          "test_size": 50},
         "loop": {"max_labels": 40}, "model": {"network": "cnn"}}  # fmt: skip
    )
    data = prepare_data(config, tmp_path)
    with np.load(data.path) as archive:
        x, y = archive["x"], archive["y"]
    assert x.dtype == np.float32 and x.shape[1:] == (1, 28, 28) and 0.0 <= x.min() and x.max() <= 1.0
    for split in data.splits:
        assert len(split.pool) == 100 and len(split.test) == 50 and len(split.initial) == 20
        assert Counter(y[split.initial].tolist()) == {c: 2 for c in range(10)}
        assert all(data.keys[i].startswith("train-") for i in split.pool)
        assert all(data.keys[i].startswith("test-") for i in split.test)
    assert not np.array_equal(data.splits[0].pool, data.splits[1].pool)


# ---- Gal et al. 2017's protocol as options ------------------------------------------------------
@pytest.mark.parametrize(
    "table, key, value, words",
    [
        ("loop", "acquisition_subset", 0, ["loop.acquisition_subset", "positive integer"]),
        ("loop", "acquisition_subset", "2000", ["loop.acquisition_subset", "positive integer"]),
        ("data", "validation_size", -5, ["data.validation_size", "positive integer"]),
        ("data", "validation_size", 1300, ["data.validation_size", "leaves"]),
        ("data", "validation_size", 1210, ["loop.max_labels", "exceeds the pool"]),  # 1258 - 1210 < 40 + 10
        ("model", "weight_decay", "paper", ["model.weight_decay", '"gal"']),
        ("model", "weight_decay", -1.0, ["model.weight_decay", "non-negative"]),
        ("model", "masks", "per-item", ["model.masks", '"shared" or "independent"']),
        ("model", "epoch_samples", 0, ["model.epoch_samples", "positive integer"]),
        ("model", "patience", 3, ["model.patience", "data.validation_size"]),
        ("model", "validation_metric", "accuracy", ["model.validation_metric", "patience"]),
        ("model", "validation_metric", "f1", ["model.validation_metric", '"loss" or "accuracy"']),
        ("report", "paper", "gal2016", ["report.paper", '"gal2017"']),
        ("report", "colour", "red", ["report.colour: unknown key"]),
    ],
)
def test_protocol_options_validated(table, key, value, words):
    raw = {"acquisitions": ["bald"], "loop": {"max_labels": 40}, table: {key: value}}
    with pytest.raises(ConfigError) as info:
        StudyConfig.from_dict(raw, source="s.toml")
    message = str(info.value)
    assert "\n" not in message and all(w in message for w in words), message


def test_protocol_options_parse_and_need_mc_dropout():
    raw = {"acquisitions": ["bald"], "data": {"validation_size": 100}, "loop": {"acquisition_subset": 50},
           "model": {"weight_decay": "gal", "masks": "independent"}, "report": {"paper": "gal2017"}}  # fmt: skip
    config = StudyConfig.from_dict(raw)
    assert (config.validation_size, config.acquisition_subset, config.weight_decay, config.masks, config.paper) == (
        100, 50, "gal", "independent", "gal2017")  # fmt: skip
    assert StudyConfig.from_dict({"acquisitions": ["bald"], "model": {"weight_decay": 3}}).weight_decay == 3.0
    # the defaults are left out of the recorded config, so folders of older studies still resume
    plain = StudyConfig.from_dict({"acquisitions": ["bald"]}).to_dict()
    assert not {"validation_size", "acquisition_subset", "masks", "paper"} & set(plain)
    for model in ({"masks": "independent"}, {"weight_decay": "gal"}):
        with pytest.raises(ConfigError, match="model."):
            StudyConfig.from_dict({"acquisitions": ["bald"], "model": {"posterior": "deep-ensemble", **model}})
    assert StudyConfig.from_dict({"acquisitions": ["bald"], "loop": {"evaluation": "deterministic"}}).evaluation == "deterministic"
    assert "evaluation" not in plain
    with pytest.raises(ConfigError, match="loop.evaluation.*mc-dropout"):
        StudyConfig.from_dict({"acquisitions": ["bald"], "loop": {"evaluation": "deterministic"},
                               "model": {"posterior": "deep-ensemble"}})  # fmt: skip
    with pytest.raises(ConfigError, match='loop.evaluation: expected "predictive" or "deterministic"'):
        StudyConfig.from_dict({"acquisitions": ["bald"], "loop": {"evaluation": "mc"}})


def test_gal2017_study_configs_use_the_papers_protocol():
    for name, labels in (("mnist.toml", 1000), ("mnist-300.toml", 300)):
        text = (ROOT / "studies" / "gal2017" / name).read_text()
        assert f"max_labels = {labels}\n" in text and "acquisition_subset = 2000" in text
        assert 'weight_decay = "gal"' in text and 'masks = "independent"' in text and 'paper = "gal2017"' in text
        assert "validation_size = 5000" in text and "repeats = 3" in text and 'evaluation = "deterministic"' in text
        assert '["bald", "variation-ratio", "entropy", "mean-std", "random"]' in text


def test_batchbald_study_config_uses_their_protocol():
    """studies/batchbald/mnist.toml: Kirsch et al.'s recorded arguments (their laaos_results)."""
    if not MNIST_DIR.is_dir():
        pytest.skip(f"MNIST not found at {MNIST_DIR}")
    c = StudyConfig.from_toml(ROOT / "studies" / "batchbald" / "mnist.toml")
    assert (c.initial, c.balanced_initial, c.batch_size, c.max_labels, c.validation_size) == (20, True, 10, 300, 1024)
    assert (c.network, c.dropout, c.epochs, c.epoch_samples, c.patience, c.validation_metric) == (
        "batchbald-cnn", 0.5, 30, 5056, 3, "accuracy")  # fmt: skip
    assert (c.lr, c.weight_decay, c.train_batch_size, c.n_samples, c.masks, c.acquisition_subset) == (0.001, 0.0, 64, 100, "shared", None)
    assert c.acquisitions == ("batch-bald", "bald", "power-bald", "random")


def test_every_study_config_in_the_repository_loads():
    """Each committed study config (a TOML with `acquisitions`) passes StudyConfig's checks."""
    import dataclasses
    import tomllib

    if not MNIST_DIR.is_dir():
        pytest.skip(f"MNIST not found at {MNIST_DIR}")
    paths = [p for p in sorted((ROOT / "studies").rglob("*.toml")) if "acquisitions" in tomllib.loads(p.read_text())]
    assert len(paths) >= 20
    configs = {p.relative_to(ROOT / "studies").as_posix(): StudyConfig.from_toml(p) for p in paths}
    # mnist-resampled.toml is mnist.toml trained as Kirsch et al. do, nothing else changed
    paper, resampled = (dataclasses.asdict(configs[f"gal2017/{n}.toml"]) for n in ("mnist", "mnist-resampled"))
    changed = {k for k in paper if paper[k] != resampled[k]}
    assert changed == {"name", "source", "epochs", "epoch_samples", "patience", "validation_metric", "train_batch_size"}


def test_labels_to_reach_hand_made_curve():
    from activebayes.study import labels_to_reach

    curve = [(40, 0.93), (20, 0.5), (30, 0.9), (50, 0.96)]
    assert labels_to_reach(curve, 0.90) == 30  # the first label count at or above the target
    assert labels_to_reach(curve, 0.95) == 50
    assert labels_to_reach(curve, 0.97) is None
    assert labels_to_reach([], 0.9) is None


def test_independent_masks_reproducible_and_unlike_shared():
    import torch

    from activebayes.nets import mlp
    from activebayes.posteriors.mc_dropout import MCDropout
    from activebayes.training import TrainConfig

    x = torch.randn(48, 6, generator=torch.Generator().manual_seed(0))
    y = (x[:, 0] > 0).long()

    def fit(masks, **kw):
        return MCDropout(mlp(6, 2, hidden=(16,)), n_samples=5, train=TrainConfig(epochs=2), seed=3, device="cpu", masks=masks, **kw).fit(x, y)

    same = x[:1].repeat(4, 1)  # one item four times
    shared, independent = fit("shared"), fit("independent")
    p_shared, p_ind = shared.predict(same).probs, independent.predict(same).probs
    assert torch.equal(p_shared[:, 0], p_shared[:, 3])  # shared masks: the copies agree
    assert not torch.equal(p_ind[:, 0], p_ind[:, 3])  # independent: each item its own masks
    assert torch.equal(p_ind, fit("independent").predict(same).probs)  # seeded: reproducible
    assert torch.equal(p_ind, independent.predict(same).probs)
    reference = MCDropout(mlp(6, 2, hidden=(16,)), n_samples=5, train=TrainConfig(epochs=2), seed=3, device="cpu", masks="independent",
                          prefix_cache=False).fit(x, y)  # fmt: skip
    assert reference.predict(same).probs.shape == (5, 4, 2)
    with pytest.raises(ConfigError, match="masks"):
        MCDropout(mlp(6, 2), masks="sometimes")
    # weight_decay_scale: c / N of the training items
    from activebayes.training import resolve_train_config

    assert resolve_train_config(None, weight_decay=7.0 / 48).weight_decay == pytest.approx(7.0 / 48)


def test_protocol_study_end_to_end(tmp_path):
    text = BASE.replace("max_labels = 40", "max_labels = 100").replace("batch_size = 10", "batch_size = 40")
    text = text.replace("epochs = 200", "epochs = 5\nweight_decay = \"gal\"\nmasks = \"independent\"")
    text = text.replace("pool_size = 400", "pool_size = 400\nvalidation_size = 100")
    text = text.replace("[model]", "acquisition_subset = 60\n\n[model]") + '\n[report]\npaper = "gal2017"\n'
    (tmp_path / "p.toml").write_text(text)
    config = StudyConfig.from_toml(tmp_path / "p.toml")
    a = run_study(config, tmp_path / "a", device="cpu")
    doc = json.loads(a.results.read_text())
    assert set(doc["labels_to_reach"]["bald"]) == {"0.90", "0.95"}
    reach = doc["labels_to_reach"]["bald"]["0.90"]
    assert len(reach["per_seed"]) == 2 and all(v is None or v in (20, 60, 100) for v in reach["per_seed"])
    timings = json.loads((a.out_dir / doc["timings"]).read_text())  # the seconds: beside results.json, not in it
    for acquisition in ("bald", "random"):
        t = timings["milestones"][acquisition]["100"]
        assert t["n"] == 2 and all(t[k] is not None and t[k] >= 0 for k in ("fit_s", "evaluate_s", "score_s"))
    assert doc["paper"]["labels_to_reach"]["bald"] == {"0.90": 145, "0.95": 335}
    for acquisition, runs in doc["rounds"].items():  # every round's test metrics, and its seconds in timings.json
        assert [[r["labels"] for r in run] for run in runs] == [[n for n, _ in run] for run in doc["runs"][acquisition]]
        assert [[r["labels"] for r in run] for run in timings["rounds"][acquisition]] == [[r["labels"] for r in run] for run in runs]
        assert [[r["accuracy"] for r in run] for run in runs] == [[acc for _, acc in run] for run in doc["runs"][acquisition]]
        for r in (r for run in runs for r in run):
            assert r["nll"] > 0 and 0 <= r["ece"] <= 1 and set(r) == {"labels", "accuracy", "nll", "ece"}
        for r in (r for run in timings["rounds"][acquisition] for r in run):
            assert r["fit_s"] >= 0 and r["evaluate_s"] >= 0 and r["score_s"] >= 0
    assert a.plot.stat().st_size > 0
    with sqlite3.connect(a.database) as conn:  # the validation rows are in no pool
        pool = conn.execute("SELECT COUNT(*) FROM items WHERE split = 'pool' GROUP BY project_id").fetchall()
    assert {n for (n,) in pool} == {400}
    b = run_study(config, tmp_path / "b", device="cpu")
    assert b.runs == a.runs  # seeded subset and masks: the same study again
    assert b.results.read_bytes() == a.results.read_bytes()  # and the same results file, byte for byte


def test_early_stopping_on_the_validation_split_with_fixed_length_epochs(tmp_path, monkeypatch):
    """[model] epoch_samples and patience reach every fit's TrainConfig; the validation set is the
    repeat's held-out split (in no project), as `prepare_data` leaves it out of the pool."""
    from activebayes import training
    from activebayes.data import digits_arrays
    from activebayes.study import validation_set

    text = BASE.replace("pool_size = 400", "pool_size = 400\nvalidation_size = 100")
    text = text.replace("epochs = 200", "epochs = 30\nepoch_samples = 256\npatience = 2\nvalidation_metric = \"accuracy\"")
    (tmp_path / "p.toml").write_text(text)
    config = StudyConfig.from_toml(tmp_path / "p.toml")
    seen = []
    real_train = training.train

    def recording_train(model, x, y, config=training.TrainConfig(), **kwargs):
        seen.append(config)
        return real_train(model, x, y, config, **kwargs)

    monkeypatch.setattr("activebayes.posteriors.mc_dropout.train", recording_train)
    result = run_study(config, tmp_path / "out", device="cpu")
    assert seen and all(c.epoch_samples == 256 and c.patience == 2 and c.validation_metric == "accuracy" for c in seen)
    x_all, y_all = digits_arrays()
    data = prepare_data(config, tmp_path / "out")
    for repeat in range(config.repeats):
        x_val, y_val = validation_set(config, repeat)
        assert x_val.shape == (100, 64) and y_val.dtype == np.int64 and y_val.shape == (100,)
        in_project = {int(data.keys[i].split("-")[1]) for i in np.concatenate([data.splits[repeat].pool, data.splits[repeat].test])}
        for x, y in zip(x_val, y_val):  # each validation image is a digits row (with its label) outside the project
            rows = set(np.flatnonzero((x_all == x).all(1) & (y_all == y)).tolist())
            assert rows and rows - in_project
    assert seen[0].validation_data is not None and len(seen[0].validation_data[0]) == 100
    assert result.runs == run_study(config, tmp_path / "again", device="cpu").runs  # still seeded


def test_run_one_per_run_then_collect_results_equals_run_study(tmp_path):
    from activebayes.study import collect_results, run_one

    config = StudyConfig.from_toml(DIGITS_TOML)
    whole = run_study(config, tmp_path / "whole", device="cpu")
    seen: list[tuple[int, int, str]] = []
    for repeat in range(config.repeats):
        for acquisition in config.acquisitions:
            curve = run_one(config, tmp_path / "parts", acquisition, repeat, "cpu", progress=lambda *a: seen.append(a))
            assert curve == whole.runs[acquisition][repeat]
    assert seen[-1] == (config.rounds_per_run, config.rounds_per_run, f"random, repeat {config.repeats}/{config.repeats}")
    parts = collect_results(config, tmp_path / "parts")
    assert parts.runs == whole.runs and parts.curves == whole.curves
    assert run_one(config, tmp_path / "parts", "bald", 0, "cpu") == whole.runs["bald"][0]  # finished: nothing to do
    with pytest.raises(ConfigError, match="repeat"):
        run_one(config, tmp_path / "parts", "bald", config.repeats, "cpu")
    with pytest.raises(ConfigError, match="not in the study"):
        run_one(config, tmp_path / "parts", "entropy", 0, "cpu")


def test_model_options_reach_the_posterior_and_are_recorded(tmp_path):
    """[model] options: the posterior's own constructor options, e.g. Jung et al.'s warm start."""
    from activebayes.study import _posterior_factory

    text = BASE.replace('posterior = "mc-dropout"', 'posterior = "snapshot-ensemble"\noptions = { warm_start = true, epochs_per_cycle = 3 }')
    (tmp_path / "s.toml").write_text(text)
    config = StudyConfig.from_toml(tmp_path / "s.toml")
    assert config.posterior_options == {"warm_start": True, "epochs_per_cycle": 3}
    assert config.to_dict()["posterior_options"] == {"warm_start": True, "epochs_per_cycle": 3}
    factory, settings = _posterior_factory(config, (64,), "cpu")
    posterior = factory(seed=0)
    assert (posterior.warm_start, posterior.epochs_per_cycle) == (True, 3)
    assert settings["warm_start"] is True and settings["epochs_per_cycle"] == 3
    assert "posterior_options" not in StudyConfig.from_toml(DIGITS_TOML).to_dict()  # older output folders still resume

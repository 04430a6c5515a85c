"""Free text as features: TF-IDF, then a truncated SVD (latent semantic analysis), fitted on the
pool at `pool add` and recorded in a checksummed .npz (no pickle), applied by pure numpy.

For documents d with term counts c_dt over a vocabulary of V terms (`text_tokens.terms`:
scikit-learn's lower-cased words of two or more characters, accents stripped, and the characters
and character pairs of Chinese and Japanese, which are written without spaces; a model recorded
before that rule, without "tokens" in its entry, keeps scikit-learn's default terms):

    tf_dt  = 1 + log c_dt           (c_dt > 0; sublinear term frequency)
    idf_t  = 1 + log((1 + n) / (1 + df_t))
    u_d    = (tf_d ⊙ idf) / ‖tf_d ⊙ idf‖₂               [V]   (an empty document stays 0)
    z_d    = W u_d / s                                   [k]

W [k, V] holds the first k right singular vectors of the pool's TF-IDF matrix (k = min(dims,
V − 1, n − 1)); s = sqrt(mean_j var(W u)_j) over the pool, one scale for the whole block so the
components keep their relative sizes (the leading ones carry most of the variance).

    pipeline = text_pipeline(n_rows, dims)                         # inside the ColumnTransformer
    entry = save_text_model(pipeline, folder, data_path, "review")  # {"file", "sha256", "dims", ...}
    z = apply_text_model(entry, texts)                              # [N, k] float64
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from activebayes.data.text_tokens import TOKENS, terms
from activebayes.errors import DataError

TEXT_DIMS = 256  # components kept (fewer for a small pool or vocabulary)
MAX_TERMS = 10_000  # vocabulary kept: the most frequent terms
SUFFIX = ".text-model.npz"


def _min_df(n_rows: int) -> int:
    """A term seen in one document only is dropped once there are 50 documents or more."""
    return 2 if n_rows >= 50 else 1


def _analyzer_options(entry: dict[str, Any] | None = None) -> dict[str, Any]:
    """How a document becomes terms: `terms` for a new model (entry None) or one recorded with
    "tokens"; scikit-learn's default words for a model recorded before."""
    if entry is not None and entry.get("tokens") != TOKENS:
        return {"strip_accents": "unicode", "lowercase": True}
    return {"analyzer": terms}


def text_pipeline(n_rows: int, dims: int | None = None) -> Any:
    """The unfitted scikit-learn pipeline of one text column: TfidfVectorizer, a TruncatedSVD
    capped to the data, and one scale for the block."""
    from sklearn.base import BaseEstimator, TransformerMixin
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import Pipeline

    class CappedSVD(TruncatedSVD):
        """TruncatedSVD with n_components cut to what the data allows (min(k, V − 1, n − 1))."""

        def fit_transform(self, X, y=None):  # noqa: N803 (scikit-learn's names)
            cap = min(X.shape[1] - 1, X.shape[0] - 1)
            if cap < 1:
                raise DataError(f"text column: {X.shape[1]} distinct word(s) in {X.shape[0]} rows is too little text to learn from")
            self.n_components = min(self.n_components, cap)
            with np.errstate(invalid="ignore", divide="ignore"):  # explained_variance_ratio_ (unused) of text alike in every row: 0/0
                return super().fit_transform(X, y)

    class BlockScale(TransformerMixin, BaseEstimator):
        """x / s with s = sqrt(mean over columns of their variance) (1 when that is 0)."""

        def fit(self, X, y=None):  # noqa: N803
            var = float(np.mean(np.var(np.asarray(X, dtype=np.float64), axis=0)))
            self.scale_ = float(np.sqrt(var)) if var > 0 else 1.0
            return self

        def transform(self, X):  # noqa: N803
            return np.asarray(X, dtype=np.float64) / self.scale_

    tfidf = TfidfVectorizer(sublinear_tf=True, max_features=MAX_TERMS, min_df=_min_df(n_rows), **_analyzer_options())
    svd = CappedSVD(n_components=dims or TEXT_DIMS, algorithm="randomized", n_iter=7, random_state=0)
    return Pipeline([("tfidf", tfidf), ("svd", svd), ("scale", BlockScale())])


def save_text_model(pipeline: Any, folder: Path, data_path: Path, column: str) -> dict[str, Any]:
    """Write the fitted pipeline's vocabulary, idf, projection and scale to a new .npz in
    `folder`; returns the spec entry {"file", "sha256", "dims", "terms", "min_df"}."""
    from activebayes.data.dataset import sha256_file

    tfidf, svd, scale = (pipeline.named_steps[s] for s in ("tfidf", "svd", "scale"))
    vocabulary = np.asarray(tfidf.get_feature_names_out(), dtype=str)
    folder.mkdir(parents=True, exist_ok=True)
    safe = "".join(ch if ch.isalnum() else "-" for ch in column)[:40]
    path = folder / f"{Path(data_path).stem}-{safe}-{secrets.token_hex(4)}{SUFFIX}"
    with path.open("wb") as fh:
        np.savez(fh, vocabulary=vocabulary, idf=np.asarray(tfidf.idf_, dtype=np.float64),
                 components=np.asarray(svd.components_, dtype=np.float64), scale=np.float64(scale.scale_))  # fmt: skip
    return {"file": str(path.resolve()), "sha256": sha256_file(path), "dims": int(svd.components_.shape[0]),
            "terms": int(vocabulary.size), "min_df": tfidf.min_df, "tokens": TOKENS}  # fmt: skip


def load_text_model(entry: dict[str, Any]) -> dict[str, np.ndarray]:
    """The arrays of a recorded text model, after checking its sha256 (DataError when the file
    is missing or changed)."""
    from activebayes.data.dataset import sha256_file

    path = Path(entry["file"])
    if not path.is_file() or sha256_file(path) != entry["sha256"]:
        raise DataError(
            f"text model {str(path)!r} of column {entry['name']!r} is missing or changed since `pool add`; restore it, "
            "or import the data into a new project"
        )
    with np.load(path, allow_pickle=False) as archive:
        return {k: archive[k] for k in ("vocabulary", "idf", "components", "scale")}


def apply_text_model(entry: dict[str, Any], texts: Sequence[str]) -> np.ndarray:
    """[N, k] float64: the recorded model applied to N documents (module docstring's maths)."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.preprocessing import normalize

    model = load_text_model(entry)
    vocabulary = {str(t): i for i, t in enumerate(model["vocabulary"].tolist())}
    counts = CountVectorizer(vocabulary=vocabulary, **_analyzer_options(entry)).transform(list(texts)).astype(np.float64).tocsr()
    counts.data = 1.0 + np.log(counts.data)
    weighted = normalize(counts.multiply(model["idf"][None, :]).tocsr(), norm="l2")
    return np.asarray(weighted @ model["components"].T) / float(model["scale"])

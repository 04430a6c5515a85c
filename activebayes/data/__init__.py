"""Loading pools (npy / npz / csv / MNIST IDX) and the bundled demo data (sklearn digits).

    data = load_dataset("pool.csv", label_column="label", key_column="key", classes=range(10))
    data.x  # [N, D] features;  data.y  # [N] labels or None;  data.keys  # list or None

Tabular pools: `categorical="auto"` one-hot encodes text columns; `features=spec` (a project's
settings["features"], from `fit_features`) applies the recorded encoding and standardisation.
A store project's data file and held-back truth: `load_project_data`, `project_truth`.
"""

from activebayes.data.bundled import DIGITS_CLASSES, digits_arrays, write_digits
from activebayes.data.features import (
    apply_features,
    fit_features,
    natural_sorted,
    one_hot,
    standardize,
    standardize_stats,
)
from activebayes.data.loaders import (
    FORMATS,
    Dataset,
    check_finite,
    check_labels,
    detect_format,
    label_text,
    load_dataset,
    load_labels,
    read_idx,
    sha256_file,
)
from activebayes.data.project import load_project_data, project_truth, truth_labels

__all__ = [
    "DIGITS_CLASSES",
    "apply_features",
    "fit_features",
    "natural_sorted",
    "one_hot",
    "standardize",
    "standardize_stats",
    "FORMATS",
    "Dataset",
    "check_finite",
    "check_labels",
    "detect_format",
    "digits_arrays",
    "label_text",
    "load_dataset",
    "load_labels",
    "load_project_data",
    "project_truth",
    "read_idx",
    "sha256_file",
    "truth_labels",
    "write_digits",
]

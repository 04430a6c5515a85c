import importlib

import activebayes


def test_every_public_name_resolves():
    for name in activebayes.__all__:
        assert getattr(activebayes, name) is not None, name


def test_lazy_names_are_the_module_objects():
    assert activebayes.PoolStore is importlib.import_module("activebayes.store").PoolStore
    assert activebayes.MCDropout is importlib.import_module("activebayes.posteriors.mc_dropout").MCDropout


def test_registry_names_resolve_to_posteriors():
    from activebayes.posteriors import POSTERIORS, resolve_posterior

    for name in POSTERIORS:
        cls = resolve_posterior(name)
        assert hasattr(cls, "fit") and hasattr(cls, "predict"), name


# The library's layers, bottom to top (README.md, "Architecture"): a module imports only from its
# own layer and those below it.
LAYERS = {
    1: ("errors", "predictive", "metrics", "_device", "_memory", "distributed", "estimates", "estimate_intervals", "per_item_losses", "active_testing_proposal", "stopping", "round_estimates", "likelihoods",
        "target_units", "same_rows", "row_weights", "atomic_files"),
    2: ("acquisition", "active_testing"),
    3: ("nets", "_optimizers", "training", "gaussian_likelihood", "posteriors", "debias", "marglik", "model_selection"),
    4: ("scoring",),
    5: ("store", "data"),
    6: ("oracles",),
    7: ("loop", "round_result", "_selection", "_evaluation", "_project_data", "study", "study_config", "study_data", "study_results", "study_jobs", "batched_runs", "design", "report", "score_histograms", "figures", "_round_signals", "web"),
}


def test_modules_import_only_from_their_layer_or_below():
    import re
    from pathlib import Path

    import activebayes

    layer_of = {name: layer for layer, names in LAYERS.items() for name in names}
    root = Path(activebayes.__file__).parent
    tops = {p.stem if p.suffix == ".py" else p.name for p in root.iterdir() if p.name != "__init__.py" and (p.suffix == ".py" or (p / "__init__.py").exists())}
    assert tops <= set(layer_of), f"modules without a layer: {sorted(tops - set(layer_of))}"
    upward = []
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[0] == "__init__" or "migrations" in parts:
            continue
        for imported in re.findall(r"^\s*(?:from|import) activebayes\.([a-z_]+)", path.read_text(encoding="utf-8"), re.M):
            if layer_of[imported] > layer_of[parts[0]]:
                upward.append(f"{'/'.join(parts)} imports activebayes.{imported}")
    assert not upward, upward

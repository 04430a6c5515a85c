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

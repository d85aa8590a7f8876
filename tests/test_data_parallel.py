"""One data-parallel size (issue 31): ``trainlint.core.framework.data_parallel_size`` is the one
computation the start-up rules (``data_parallel``), the estimator, the layout search and the fix
hints use; over the corpus the estimator's DP and model-parallel product are the framework's."""

from __future__ import annotations

import pytest

from trainlint.core.framework import data_parallel, data_parallel_size, model_parallel_product


def test_data_parallel_size_is_the_exact_quotient_or_none():
    for world in range(-2, 65):
        for product in range(-2, 17):
            dp = data_parallel_size(world, product)
            if world >= 1 and product >= 1 and world % product == 0:
                assert dp is not None and dp * product == world and dp >= 1
            else:
                assert dp is None, (world, product)


def test_the_rules_and_search_import_the_one_function():
    # derive (the rules' helper module) re-exports the core's functions; it defines none of its own
    from trainlint.layout import space
    from trainlint.rules.estimation import fixes
    from trainlint.rules.startup import derive

    assert derive.data_parallel is data_parallel and derive.model_parallel_product is model_parallel_product
    assert space.data_parallel_size is data_parallel_size and fixes.data_parallel_size is data_parallel_size


@pytest.mark.slow
def test_estimator_and_rules_agree_on_dp_over_the_corpus(corpus_dir):
    from trainlint.adapters import builtin_adapters
    from trainlint.files.checker import check_paths
    from trainlint.estimator import build_context, estimate

    compared = 0
    adapters = builtin_adapters()
    for result in check_paths([str(corpus_dir)], adapters):
        for spec in result.specs:
            rules_dp = data_parallel(spec)
            if rules_dp is None:
                continue
            try:
                est = estimate(spec, build_context(spec, gpu="h100-80gb"))
            except Exception:  # noqa: BLE001 - an estimator invariant is another test's business
                continue
            if not est.ok or spec.cluster.world_size is None or spec.cluster.world_size.provenance.uncertain:
                continue
            i = est.inputs
            product = model_parallel_product(spec)
            assert product is not None
            assert (i.dp, i.tp * i.pp * i.cp) == (rules_dp.size, product[0]), spec.label
            compared += 1
    assert compared >= 50, compared

"""Issue 27 over the real configs of ../shared/corpus (forks included), the whole corpus, with
benchmarks/fix_positions.py's own measures:

* every flag/key finding (TL004/5/6/8/11) is at the flag or key it names (or its value);
* every fixable finding's fix, applied alone, changes only the settings it names (the file's
  runs read again by their adapter and compared);
* ``check --fix --unsafe-fixes`` on a copy of the corpus changes no file's spec outside its fixes.

They skip without ../shared (conftest's ``corpus_dir``).
"""

from __future__ import annotations

import sys

import pytest

from conftest import REPO

# every test here checks and fixes copies of the whole corpus: part of the CI run, not of a developer's
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import fix_positions as module
    finally:
        sys.path.pop(0)
    return module


@pytest.fixture(scope="module")
def linted(bench, corpus_dir):
    session, results = bench.lint([str(corpus_dir)])
    assert not [r.path for r in results if r.internal_error]
    return session, results, bench.texts_of(results)


def test_every_flag_and_key_finding_is_at_its_word(bench, linted):
    _, results, texts = linted
    good, total, bad = bench.positions(results, texts, show=20)
    assert total >= 100  # the corpus has hundreds of these; a reader that lost them would pass vacuously
    assert good == total, "\n".join(bad)


def test_each_fix_applied_alone_changes_only_what_it_names(bench, linted):
    session, results, texts = linted
    changed, fixes, bad = bench.fixes_alone(session, results, texts, show=20)
    assert fixes >= 10
    assert changed == 0, "\n".join(bad)


def test_fixing_a_copy_of_the_corpus_changes_no_spec_outside_its_fixes(bench, corpus_dir):
    wrong, files, bad, code = bench.whole_copy([str(corpus_dir)], show=20)
    assert code in (0, 1)
    assert files >= 10  # fixes were written
    assert wrong == 0, "\n".join(bad)

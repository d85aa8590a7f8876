"""Cooperative cancellation (``trainlint.core.cancel``): a cancelled lint stops at its next safe point
in every kind of work that repeats (JSON values, YAML values, shell steps, rules), and the
handlers that turn failures into TL998/TL999 let it through. The language server's use of it is
tested over stdio in test_lsp_safety.py."""

from __future__ import annotations

import pytest

from trainlint.core import cancel
from trainlint.lsp.workspace import Linter


class CancelAt(cancel.Token):
    """Cancels itself at its ``at``-th safe point, as the event loop would from outside."""

    __slots__ = ("at",)

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def check(self) -> None:
        if self.checks + 1 == self.at:
            self.cancel("test")
        super().check()


NEOX = "num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\nseq_length: 128\n"
DOCUMENTS = {
    "ds_config.json": "{" + ", ".join(f'"k{i}": {i}' for i in range(20000)) + ', "train_micro_batch_size_per_gpu": 4}\n',
    "big.yml": NEOX + "train_data_paths:\n" + "".join(f"  - [{i}, {{a: {i}}}]\n" for i in range(5000)),
    # nested functions: thousands of evaluation steps before the launch line
    "bomb.sh": "f0() { X=1; }\n" + "".join(f"f{i}() {{ f{i - 1}; f{i - 1}; f{i - 1}; }}\n" for i in range(1, 7))
               + "f6\ntorchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4\n",
}


@pytest.fixture(scope="module")
def linter() -> Linter:
    linter = Linter()
    linter.lint("/tmp/warm.json", '{"train_micro_batch_size_per_gpu": 4}\n')
    return linter


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_a_cancelled_lint_stops_at_the_next_safe_point(tmp_path, linter, name):
    path = str(tmp_path / name)
    full = cancel.Token()
    with cancel.scope(full):
        linted = linter.lint(path, DOCUMENTS[name])
    assert linted.result is not None and linted.result.format is not None, name
    assert full.checks > 20, (name, full.checks)  # the work has safe points all through it
    linter.forget_memoised()  # the rules run again, as after an edit (their safe points counted above)
    at = full.checks // 2
    token = CancelAt(at)
    with cancel.scope(token), pytest.raises(cancel.Cancelled, match="test"):
        linter.lint(path, DOCUMENTS[name])
    assert token.checks == at  # not one safe point after the cancel: the lint stopped there
    # the linter is usable afterwards, and a lint without a scope is never cancelled
    assert linter.lint(path, DOCUMENTS[name]).result.format == linted.result.format


def test_cancelled_between_rules_is_not_a_tl998(tmp_path, linter):
    path = str(tmp_path / "ds_config.json")
    text = '{"train_micro_batch_size_per_gpu": 4, "train_batch_size": 7, "gradient_accumulation_steps": 2}\n'
    full = cancel.Token()
    with cancel.scope(full):
        linted = linter.lint(path, text)
    assert "TL100" in {d.code for d in linted.result.diagnostics} | {d.code for ds in linted.by_path.values() for d in ds}
    token = CancelAt(full.checks)  # the last safe point: among the rules
    linter.forget_memoised()  # the rules run again, as after an edit that changes the run
    with cancel.scope(token), pytest.raises(cancel.Cancelled):
        linter.lint(path, text)


def test_outside_a_scope_check_does_nothing():
    cancel.check()
    token = cancel.Token()
    token.cancel("first")
    token.cancel("second")
    assert token.reason == "first" and token.cancelled
    with cancel.scope(token), pytest.raises(cancel.Cancelled):
        cancel.check()
    cancel.check()  # the scope is gone
    assert issubclass(cancel.Cancelled, BaseException) and not issubclass(cancel.Cancelled, Exception)

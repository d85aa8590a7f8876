"""The launch-script parser's grammar is tree-sitter-bash's, read from its compiled binding
without running the package's __init__ (which imports importlib.resources), or by the ordinary
import where the package is imported already."""

from __future__ import annotations

import subprocess
import sys

from tree_sitter import Language

from trainlint.adapters.megatron.shell_text import _parser, bash_language


def test_the_binding_gives_the_packages_grammar():
    import tree_sitter_bash

    assert Language(bash_language()) == Language(tree_sitter_bash.language())  # the package imported: its own
    tree = _parser().parse(b"torchrun pretrain_gpt.py --num-layers 2\n")
    assert tree.root_node.type == "program" and not tree.root_node.has_error


def test_a_fresh_process_parses_without_importing_the_package():
    code = ("import sys\n"
            "from trainlint.adapters.megatron.shell_text import _parser\n"
            "root = _parser().parse(b'python pretrain_gpt.py --tensor-model-parallel-size 2').root_node\n"
            "print(root.type, root.has_error, 'tree_sitter_bash' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["program", "False", "False"]

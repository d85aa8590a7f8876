"""The trainlint language server (``trainlint lsp``); needs the optional extra ``trainlint[lsp]``."""

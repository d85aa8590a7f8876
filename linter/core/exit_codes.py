"""Exit codes, as ruff: 0 clean, 1 findings at the fail level, 2 usage/config/internal error."""

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2

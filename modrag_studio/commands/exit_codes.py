"""Exit codes of every ``modrag`` command: 0 ok, 1 the run failed, 2 invalid input."""

EXIT_OK, EXIT_RUN_FAILED, EXIT_INVALID = 0, 1, 2

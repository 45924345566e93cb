"""Exit codes of every ``modrag`` command: 0 ok, 1 the run failed, 2 invalid input."""

from modrag_studio.engine.core.errors import InvalidSetting

EXIT_OK, EXIT_RUN_FAILED, EXIT_INVALID = 0, 1, 2

#: Errors any command may meet before it does its work (``MODRAG_CACHE_DISK_MB=inf``): the
#: command line answers them with their message and EXIT_INVALID.
INVALID_SETTINGS: tuple[type[Exception], ...] = (InvalidSetting,)

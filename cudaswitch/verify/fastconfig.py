"""The switch settings live in the base layer (cudaswitch/fastconfig.py): the switch plan reads
them, and switch/ must not import verify/. Named here for the callers that read them from verify."""

from cudaswitch.fastconfig import DEFAULTS, FILE, MAX_BYTES, VERDICT_MODES, switch_settings  # noqa: F401

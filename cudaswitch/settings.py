"""Every default cudaswitch applies, stated once with why, and every CUDASWITCH_* variable it reads.
Imports nothing: the fast path reads it on every run."""

# --- timeouts (seconds) -------------------------------------------------------------------------
# The torch probe: a child Python that imports torch and asks it about CUDA. A cold import of a
# CUDA torch from a network filesystem takes tens of seconds, so verify, doctor, explain and audit
# wait up to a minute (config `torch_timeout`, `--timeout`).
TORCH_TIMEOUT: float = 60.0
# `use` waits for its verdict before the shell gets its prompt back: on a cache miss the torch probe
# is cut at 15 s unless config.toml sets `torch_timeout` itself (then that applies, as asked).
# `kernel install` prints the same verdict, so it waits the same (it said 20 s on its own).
USE_TORCH_TIMEOUT: float = 15.0
# `nvcc --version` during discovery (config `probe_timeout`): a healthy nvcc answers in
# milliseconds; a hung one on a dead NFS mount must not stall `list` for long.
PROBE_TIMEOUT: float = 5.0
# verify's own nvcc runs (`--version`, `--list-gpu-arch`) wait at least this long: a verdict
# judged on a probe that was cut short would say "cannot check" where a slower disk only lagged.
VERIFY_PROBE_TIMEOUT: float = 10.0
# The driver facts (libcuda's cuDriverGetVersion in a child, nvidia-smi): cuInit on a host with
# many GPUs takes seconds.
DRIVER_TIMEOUT: float = 20.0
# Any timeout config.toml may set.
MAX_TIMEOUT: float = 3600.0

# --- what a switch does -------------------------------------------------------------------------
# `verdict`: which lines `use` prints: all of them, only problems, or none (nothing verified).
VERDICT_MODES: tuple = ("all", "problems", "off")
# The settings a switch reads on every run (config.switch_settings, from the parsed copy).
# loader_path true: binaries built with the toolkit find libcudart only through LD_LIBRARY_PATH.
SWITCH_DEFAULTS: dict = {"verdict": "all", "loader_path": True}

# --- environment variables ----------------------------------------------------------------------
# Every CUDASWITCH_* name the package reads, with what it does; "test-only" ones exist so the test
# suite can build a host or pause a step, and are not part of what a user sets. The README's
# "Environment variables" section lists the others (tests/test_settings.py holds all three equal).
ENVIRONMENT: dict = {
    "CUDASWITCH_ROOT": "a root prefix: every filesystem source looks under it (an image, a node's root)",
    "CUDASWITCH_CONFIG_DIR": "where config.toml lives (default: $XDG_CONFIG_HOME/cudaswitch)",
    "CUDASWITCH_CACHE_DIR": "where the registry and verdict caches live (default: $XDG_CACHE_HOME/cudaswitch)",
    "CUDASWITCH_DATA_DIR": "where managed toolkits are installed (default: $XDG_DATA_HOME/cudaswitch)",
    "CUDASWITCH_LIBCUDA": "the libcuda.so the driver probe loads (default: the loader's own search)",
    "CUDASWITCH_DRIVER": "plan for this driver (as `torch --driver` takes it) in `torch` and `use`'s verdict; "
                         "`audit` ignores it",
    "CUDASWITCH_GPUS": "plan for these GPUs (sm_90,sm_90 or 8.6) in `torch` and `use`'s verdict; `audit` ignores it",
    "CUDASWITCH_PIP": "the pip command `install` runs for NVIDIA's wheels",
    "CUDASWITCH_PIP_TIMEOUT": "seconds one pip run of `install` may take",
    "CUDASWITCH_REDIST_DEADLINE": "seconds one download or document read from NVIDIA's redist server may take",
    "CUDASWITCH_ALTDIR": "the update-alternatives directory `system` manages /usr/local/cuda through",
    "CUDASWITCH_ADMINDIR": "the update-alternatives admin directory `system` reads",
    "CUDASWITCH_NO_FAST": "1: every command goes through the full command-line parser (a check of the fast one)",
    "CUDASWITCH_STATE": "set by a switch: what it replaced, so `off` restores it (never set it by hand)",
    "CUDASWITCH_UNEXPORTED": "set by a switch: the shell variables it exported that were not exported before",
    "CUDASWITCH_HOOK": "set by the hook's wrapper for one command: the shell's name (hints then name its commands)",
    "CUDASWITCH_PROBE_LOG": "test-only: a file the torch probe appends each run to (tests count probes)",
    "CUDASWITCH_PROBE_MATMUL": "0: the torch probe skips its 16x16 matmul on the GPU",
    "CUDASWITCH_TEST_PAUSE_UNPACK": "test-only: seconds an install pauses mid-unpack (signal tests)",
}
TEST_ONLY: tuple = tuple(name for name, what in ENVIRONMENT.items() if what.startswith("test-only"))

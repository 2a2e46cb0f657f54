"""The facts every verdict is a function of (driver, GPUs, the user's Python and torch, one toolkit's
nvcc, host compiler and build), each gathered at most once and only when a check asks: every command
reads them from here, so a check written once sees the same facts everywhere."""

import functools
import os

from cudaswitch.switch import plan
from cudaswitch import settings as defaults
from cudaswitch.toolkit import short_version
from cudaswitch.verify import driver as drivermod, nvcc as nvccmod

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any

    from cudaswitch.paths import Paths

CURRENT = object()  # record=CURRENT: the active (else default) toolkit, looked up when asked


def settings(paths: "Paths", tolerant: bool = False) -> dict:
    """Timeouts and the configured Python from config.toml. tolerant: a broken config gives the
    defaults (`use` must still switch; `list` reports the config error)."""
    from cudaswitch import config
    from cudaswitch.errors import CudaSwitchError

    try:
        cfg = config.load(paths)
    except CudaSwitchError:
        if not tolerant:
            raise
        cfg = {}
    return {"probe_timeout": float(cfg.get("probe_timeout", defaults.PROBE_TIMEOUT)), "python": cfg.get("python"),
            "torch_timeout": float(cfg.get("torch_timeout", defaults.TORCH_TIMEOUT)),
            "torch_timeout_set": cfg.get("torch_timeout")}


class Host:
    """Lazily computed facts. `env` is the environment the checks judge (for `use`/`verify`, the
    one after switching); `record` the toolkit (CURRENT: the active or default one, or None)."""

    def __init__(self, paths: "Paths", registry: "Any", env: dict, record: "Any" = CURRENT, python: "str | None" = None,
                 timeout: "float | None" = None, conf: "dict | None" = None, fresh_build: bool = False,
                 collective: bool = False) -> None:
        self.paths, self.registry, self.env = paths, registry, env
        self.conf = conf if conf is not None else settings(paths)
        self.timeout = float(timeout or self.conf["torch_timeout"])
        self.fresh_build = fresh_build  # `verify --compile`: build again, whatever the cache says
        self.collective = collective  # `doctor --collective`: run two ranks of the user's torch
        self._python, self._record = python, record

    @functools.cached_property
    def python(self) -> "str | None":
        from cudaswitch.verify.runner import find_python

        return find_python(self.env, self._python, self.conf["python"])

    @functools.cached_property
    def driver(self) -> dict:
        return drivermod.driver_facts(self.paths, self.env, timeout=self.timeout)

    @functools.cached_property
    def torch(self) -> dict:
        """What the user's Python reports about torch (torch_probe.py), or {"error": why it could not say}."""
        from cudaswitch.verify.runner import run_script

        if not self.python:
            return {"error": "no python3 on PATH"}
        payload, error = run_script(self.python, "torch_probe.py", [], self.env, self.timeout)
        if payload is None:
            return {"error": error, "python": self.python}
        payload.setdefault("python", self.python)
        return dict(payload, python_requested=self.python)

    @functools.cached_property
    def record(self) -> "Any":  # the record, or None: every check asks before it reads one
        if self._record is not CURRENT:
            return self._record
        from cudaswitch.switch.lookup import current_or_none

        return current_or_none(self.registry, self.env)

    @property
    def toolkit_cuda(self) -> "str | None":
        """'13.1' for the toolkit, None without one (or without a known version)."""
        return short_version(self.record["version"]) if self.record and self.record.get("version") else None

    @property
    def probe_timeout(self) -> float:
        return max(self.conf["probe_timeout"], defaults.VERIFY_PROBE_TIMEOUT)

    @functools.cached_property
    def nvcc_version(self) -> dict:
        """run_nvcc's answer for the toolkit's nvcc: {"version"} or {"error"}; {} without nvcc."""
        from cudaswitch.registry.nvcc_probe import run_nvcc

        nvcc = self.record.get("nvcc") if self.record else None
        return run_nvcc(nvcc, self.probe_timeout) if nvcc else {}

    @functools.cached_property
    def compiler(self) -> "str | None":
        """The host compiler nvcc would use in env: a -ccbin in its flag variables, NVCC_CCBIN
        where this nvcc reads it (11.x does not), else gcc on PATH. A -ccbin directory means its gcc."""
        from cudaswitch.pathsearch import which

        chosen = plan.ccbin_in_flags(self.env) or (self.env.get("NVCC_CCBIN") if self.reads_ccbin_var else None)
        if chosen and os.path.isdir(chosen):
            return os.path.join(chosen, "gcc")
        if chosen:
            return chosen if "/" in chosen else which(chosen, self.env)
        return which("gcc", self.env)

    @functools.cached_property
    def reads_ccbin_var(self) -> bool:
        """Does the toolkit's nvcc read NVCC_CCBIN (13.x does, 11.8 does not)? True without one,
        and where its binary cannot tell (a wrapper script): only a known "no" is acted on."""
        nvcc = self.record.get("nvcc") if self.record else None
        return not nvcc or plan.reads_ccbin_var(self.paths.cache_dir, nvcc) is not False

    @functools.cached_property
    def compiler_version(self) -> "str | None":
        return plan.compiler_version(self.paths.cache_dir, self.compiler, self.env) if self.compiler else None

    @functools.cached_property
    def gcc_ceiling(self) -> tuple:
        """(newest gcc major, where that comes from): the toolkit's host_config.h, else compat.toml."""
        ceiling, source = plan.gcc_ceiling(self.record)
        if ceiling is None and self.record.get("version"):
            from cudaswitch.verify import facttables

            ceiling, row = facttables.gcc_ceiling(self.record["version"])
            source = "compat.toml (%s)" % row["source"] if row else None
        return ceiling, source

    @functools.cached_property
    def nvcc_archs(self) -> "list | None":
        """['compute_75', ...] from `nvcc --list-gpu-arch`, or None when nvcc cannot say."""
        nvcc = self.record.get("nvcc") if self.record else None
        return nvccmod.gpu_archs(nvcc, self.env, self.probe_timeout) if nvcc else None

    @functools.cached_property
    def gpus(self) -> list:
        """GPUs as the driver reports them (libcuda, NVML, nvidia-smi), else as torch saw them."""
        return self.driver.get("gpus") or self.torch.get("devices") or []

    @functools.cached_property
    def build(self) -> dict:
        """The one-kernel program built with this toolkit in env (cached by what it depends on)."""
        gpus = self.driver.get("gpus") or []
        return nvccmod.cached_build(self.paths, self.record, self.env, run=bool(gpus), fresh=self.fresh_build,
                                    gpus=gpus)

    @functools.cached_property
    def pci(self) -> list:
        return drivermod.nvidia_pci_devices(self.paths)

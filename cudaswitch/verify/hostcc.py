"""The host compiler as verify judges it. The choice a switch makes, and the compiler facts it
reads (the toolkit's gcc ceiling from crt/host_config.h, a compiler's version, whether an nvcc
reads NVCC_CCBIN), live in the switch plan (cudaswitch/switch/plan.py), one layer down, so `use`
never imports verify.
"""

import os

from cudaswitch.pathsearch import which
from cudaswitch.switch.plan import ccbin_in_flags
from cudaswitch import envstate


def host_compiler(env: dict, reads_var: bool = True) -> "str | None":
    """The host compiler nvcc would use: a -ccbin in its flag variables, else NVCC_CCBIN where this
    nvcc reads it (`reads_var`; 11.x does not), else `gcc` on PATH. A -ccbin naming a
    directory means that directory's gcc."""
    chosen = ccbin_in_flags(env) or (env.get("NVCC_CCBIN") if reads_var else None)
    if chosen:
        if os.path.isdir(chosen):
            return os.path.join(chosen, "gcc")
        return chosen if "/" in chosen else which(chosen, env)
    return which("gcc", env)


def chosen_by_switch(env: dict) -> dict:
    """The compilers the active switch set (its state remembers what they replaced), or {}."""
    state = envstate.read_state(env)
    if not state:
        return {}
    chosen = {name: env.get(name) for name in ("NVCC_CCBIN", "CUDAHOSTCXX")
              if name in state["scalars"] and env.get(name)}
    if "NVCC_PREPEND_FLAGS" in state["scalars"]:
        before, mine = state["scalars"]["NVCC_PREPEND_FLAGS"]
        # the user's own -ccbin there is theirs, not the switch's
        if envstate.leads(envstate.added_ccbin(before, mine), env.get("NVCC_PREPEND_FLAGS")):
            chosen["NVCC_PREPEND_FLAGS"] = env["NVCC_PREPEND_FLAGS"]
    return chosen

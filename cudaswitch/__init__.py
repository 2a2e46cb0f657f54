"""cudaswitch: find, switch and verify CUDA toolkits.

Kept empty of imports on purpose: the fast path (`use`, `off`, `hook-env`, `current`) imports
submodules directly and must not pay for anything here.
"""

__version__ = "0.1.0"

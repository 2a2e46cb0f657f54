"""cudaswitch: find, switch and verify CUDA toolkits. No imports here: the fast path must not pay."""

__version__ = "0.1.0"

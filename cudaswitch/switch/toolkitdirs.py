"""Which path-list entries belong to a CUDA toolkit, whoever put them there: those under a root the
registry knows or a dir that looks like one (`include/cuda_runtime.h`, a `libcudart` in
`lib64`/`lib`, `bin/nvcc` beside `nvvm/`). Never `/`, `/usr`, `/usr/local`, `/opt`, the home dir,
nor a conda env or a venv: their `bin` holds the user's python. Stats only, memoised per directory."""

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from cudaswitch.toolkit import Env

# The sonames NVIDIA has shipped libcudart under (10.x-13.x) and the unversioned dev link.
CUDART_NAMES = ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so.10.2",
                "libcudart.so.10.1", "libcudart.so.10.0", "libcudart.so.14")
SYSTEM_PREFIXES = ("/", "/usr", "/usr/local", "/opt")
ANCESTORS = 4  # root/targets/x86_64-linux/lib, root/extras/CUPTI/lib64: entries sit up to 3 below a root


class Owner:
    """`owner(entry)` -> the toolkit root an entry belongs to, or None."""

    def __init__(self, known_roots: "Iterable[str]" = (), env: "Env | None" = None) -> None:
        env = env or {}
        prefix = (env.get("CUDASWITCH_ROOT") or "").rstrip("/")
        never = set(SYSTEM_PREFIXES)
        if env.get("HOME"):
            never.add(os.path.normpath(env["HOME"]))
        if prefix:
            never |= {prefix + p.rstrip("/") for p in SYSTEM_PREFIXES} | {prefix}
        self.never = never
        self.roots = sorted({os.path.normpath(r) for r in known_roots if r and r.startswith("/")} - never,
                            key=len, reverse=True)
        self._looks: "dict[str, bool]" = {}

    def __call__(self, entry: "str | None") -> "str | None":
        if not entry or not entry.startswith("/"):
            return None
        path = os.path.normpath(entry)
        for root in self.roots:
            if path == root or path.startswith(root + "/"):
                return root
        directory = path
        for _ in range(ANCESTORS):
            if directory in self.never:
                return None
            if directory not in self._looks:  # memoised: most directories are asked about again
                self._looks[directory] = _looks_like_root(directory)
            if self._looks[directory]:
                return directory
            directory = os.path.dirname(directory)
        return None


def _looks_like_root(directory: str) -> bool:
    """A toolkit's marks first (most dirs have none: one or two stats), then the envs that carry them too."""
    join, isfile = os.path.join, os.path.isfile
    marked = isfile(join(directory, "include", "cuda_runtime.h")) or (
        isfile(join(directory, "bin", "nvcc")) and os.path.isdir(join(directory, "nvvm")))
    if not marked:
        for libdir in ("lib64", "lib"):
            libs = join(directory, libdir)
            if os.path.isdir(libs) and any(os.path.exists(join(libs, name)) for name in CUDART_NAMES):
                marked = True
                break
    if not marked:
        return False
    return not (os.path.isdir(join(directory, "conda-meta")) or isfile(join(directory, "pyvenv.cfg")))


def known_roots(reg: dict) -> "list[str]":
    """Every root the registry knows that may be taken off the paths whole: toolkit roots and
    cudaswitch's own view dirs; not a conda env's prefix (its bin and lib are the env's own)."""
    roots: "list[str]" = []
    for record in reg.get("records", ()):
        for key in ("env_bin", "env_lib"):
            roots += record.get(key) or []
        if record.get("isolated") or "conda" in (record.get("sources") or ()):
            continue  # (an env's nvcc on PATH also makes it a `system` find, in the classic layout)
        roots.append(record["root"])
        real = record.get("real")
        if real and real.startswith("/"):
            roots.append(real)
    return roots

"""Where cudaswitch keeps things, and the root prefix every filesystem source looks under.
Importing platformdirs costs ~15 ms, more than `use`'s budget: on Linux the XDG answer is computed
here (`_xdg`, a test checks it agrees); other platforms go through platformdirs."""

import os
import sys

from cudaswitch.cache import usable_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.toolkit import Env

APP = "cudaswitch"


def _xdg(env: "Env", var: str, default_rel: str) -> str:
    base = env.get(var, "")
    if not os.path.isabs(base):  # the XDG spec (and platformdirs) ignore unset, empty and relative values
        base = os.path.join(os.path.expanduser("~"), default_rel)
    return os.path.join(base, APP)


def _platform_dirs(env: "Env") -> "tuple[str, str, str]":
    if sys.platform.startswith("linux"):
        return (
            _xdg(env, "XDG_CONFIG_HOME", ".config"),
            _xdg(env, "XDG_CACHE_HOME", ".cache"),
            _xdg(env, "XDG_DATA_HOME", ".local/share"),
        )
    import platformdirs  # only off Linux, where the XDG rule is wrong

    return (
        platformdirs.user_config_dir(APP),
        platformdirs.user_cache_dir(APP),
        platformdirs.user_data_dir(APP),
    )


class Paths:
    """One object for every directory; CUDASWITCH_* variables override each."""

    __slots__ = ("config_dir", "cache_dir", "data_dir", "root")

    def __init__(self, env: "Env | None" = None) -> None:
        env = os.environ if env is None else env
        config, cache, data = _platform_dirs(env)
        # a relative dir would be the cwd's: a cloned repository's own config.toml or registry cache
        given = {k: env.get("CUDASWITCH_%s_DIR" % k, "") for k in ("CONFIG", "CACHE", "DATA")}
        given = {k: v for k, v in given.items() if os.path.isabs(v)}
        self.config_dir = given.get("CONFIG") or config
        self.cache_dir = usable_dir(given.get("CACHE") or cache)  # ours and private
        self.data_dir = given.get("DATA") or data
        self.root = os.path.abspath(env.get("CUDASWITCH_ROOT") or "/")

    @property
    def config_file(self) -> str:
        return os.path.join(self.config_dir, "config.toml")

    @property
    def managed_dir(self) -> str:
        return os.path.join(self.data_dir, "toolkits")

    def host(self, path: str) -> str:
        """`path` as seen on the audited host: /usr/local/cuda -> ROOT/usr/local/cuda."""
        if self.root == "/":
            return path
        return os.path.join(self.root, path.lstrip("/"))

    def unhost(self, path: str) -> str:
        """Inverse of host(): a symlink target read under ROOT is absolute on that host."""
        if self.root == "/" or not path.startswith(self.root + "/"):
            return path
        return path[len(self.root):]


def resolve_in_root(paths: Paths, path: str, limit: int = 40) -> "tuple[str, str | None]":
    """(real path of a host path following links as if ROOT were `/`, a one-line error when a link
    dangles or loops): an image's absolute link targets are re-rooted, never the auditor's own files."""
    root = paths.root
    parts = [p for p in path.split("/") if p]
    current = root if root != "/" else ""
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            current = os.path.dirname(current) if len(current) > len(root.rstrip("/")) else current
            continue
        candidate = current + "/" + part
        try:
            target = os.readlink(candidate)
        except OSError:
            if not os.path.lexists(candidate):
                return candidate, "missing: " + paths.unhost(candidate)
            current = candidate
            continue
        hops += 1
        if hops > limit:
            return candidate, "too many levels of links at " + paths.unhost(candidate)
        if target.startswith("/"):
            current = root if root != "/" else ""
        parts = [p for p in target.split("/") if p] + parts
    return current or "/", None


def link_leaving(tree: str, root: str, limit: int = 200000) -> "str | None":
    """The first link under `tree` that the kernel would follow out of `root`, as "relative/path ->
    target", or None: reading through it would audit the auditor's host, so the toolkit is reported
    broken. Links are not followed in the walk."""
    inside = os.path.realpath(root).rstrip("/") + "/"
    stack, seen = [tree], 0
    while stack and seen < limit:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if entry.is_symlink():
                if not (os.path.realpath(entry.path) + "/").startswith(inside):
                    try:
                        target = os.readlink(entry.path)
                    except OSError:
                        target = "?"
                    return "%s -> %s" % (os.path.relpath(entry.path, tree), target)
            elif entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
    return None


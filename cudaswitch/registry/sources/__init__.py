"""Discovery sources: each module has `NAME`, `DESCRIPTION` and `find(scan)`, which yields Candidates
lazily. The source order is data (config `source_order`), read by discovery and "not found" alike."""

import os
from dataclasses import dataclass, field

from cudaswitch.cache import identities

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.paths import Paths

MAX_LINK_HOPS = 40  # as the kernel's own limit on a path lookup


@dataclass(frozen=True)
class Candidate:
    root: str                 # filesystem path of the toolkit root (under the root prefix)
    source: str               # "system", "conda", ...
    origin: str               # where this source saw it: a path, a module name, an env
    layout: str = "classic"   # see layouts.py
    hint_version: str | None = None  # what the source itself claims (conda record, module name)
    dangling: str | None = None      # a reason when the root is a dangling link


@dataclass
class Scan:
    """What a discovery run sees (host, env, config) and the paths whose identities keep its cache valid."""

    paths: "Paths"
    env: dict
    config: dict
    timeout: float
    watched: dict = field(default_factory=dict)

    def watch(self, path: str) -> None:
        """Record path -> its identity (None when absent) for cache validation."""
        if path not in self.watched:
            self.watched.update(identities((path,)))

    def watch_links(self, hostpath: str) -> None:
        """Watch the directory holding each link on the way from `hostpath` (as seen on the host) to
        its target: update-alternatives retargets /etc/alternatives/cuda, not /usr/local/cuda, and
        only the directory of the link it replaces changes."""
        for _ in range(MAX_LINK_HOPS):
            seen = self.paths.host(hostpath)
            self.watch(os.path.dirname(seen))
            try:
                target = os.readlink(seen)
            except OSError:
                return
            hostpath = os.path.normpath(os.path.join(os.path.dirname(hostpath), target))

    def listdir(self, path: str) -> "list[str]":
        self.watch(path)
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []

    def env_path(self, value: str) -> str:
        """A path from an environment variable, seen through the root prefix."""
        if self.paths.root != "/" and not value.startswith(self.paths.root + "/"):
            return self.paths.host(value)
        return value


def source_modules() -> dict:
    from cudaswitch.registry.sources import conda, managed, modules, pip, spack, system, user

    return {m.NAME: m for m in (user, managed, system, modules, spack, conda, pip)}


def searched(order: "list[str]") -> str:
    """Where each source looked, in search order: "nothing found" names the list the registry walked."""
    modules = source_modules()
    return "; ".join("%s: %s" % (name, modules[name].DESCRIPTION) for name in order if name in modules)

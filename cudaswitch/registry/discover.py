"""Discover every toolkit, dedupe by real path, cache the result. The cache stays valid while its
inputs hold: root prefix, config file, managed dir, the environment variables sources read (as
before cudaswitch touched them, so a `use` keeps it), and the identity of every path a source
looked at, empty places and version files included (a package installed later, a toolkit rewritten
in place with its mtimes kept). A damaged or foreign cache is rebuilt.
"""

import os

from cudaswitch import cache as cachefile
from cudaswitch import envstate
from cudaswitch.paths import link_leaving, resolve_in_root
from cudaswitch.settings import PROBE_TIMEOUT
from cudaswitch.toolkit import STATUSES, version_tuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

    from cudaswitch.paths import Paths
    from cudaswitch.registry.sources import Candidate, Scan
    from cudaswitch.toolkit import Env, ToolkitRecord

# 8: every record holds every key of toolkit.ToolkitRecord (made by toolkit.new_record); 9: paths
# are watched by their whole identity, not their mtime
CACHE_FORMAT = 9
CACHE_FILE = "registry.marshal"
VERSION_FILES = ("version.json", "version.txt")  # what a record's version is read from first
ENV_KEYS = ("CUDASWITCH_ROOT", "HOME", "PATH", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "CONDA_EXE",
            "VIRTUAL_ENV", "MODULEPATH", "LMOD_CMD", "LMOD_DIR", "MODULES_CMD", "MODULESHOME", "SPACK_ROOT",
            "SPACK_USER_CONFIG_PATH", "SPACK_SYSTEM_CONFIG_PATH", "SPACK_DISABLE_LOCAL_CONFIG", "USER", "LOGNAME")
RECORD_KEYS = frozenset(("version", "root", "real", "sources", "origins", "nvcc", "status", "problems",
                         "bin_dirs", "lib_dirs", "env_bin", "env_lib", "isolated"))


def _key_of(paths: "Paths", base: "Env") -> tuple:
    """Two data dirs (CUDASWITCH_DATA_DIR, XDG_DATA_HOME) can share one cache dir: the managed
    toolkits and the config file in use are part of what a cache was built from."""
    return (paths.managed_dir, paths.config_file) + tuple(base.get(k) for k in ENV_KEYS)


def scanned_env(paths: "Paths", env: "Env") -> "Env":
    """The environment discovery reads. CUDASWITCH_STATE is data anyone who can set a variable
    chooses, so its record of the environment before the switch may only select a registry
    cudaswitch built (exactly the key of the cache on disk); else the environment as it is is read,
    and nothing the state names is probed or run."""
    base = envstate.before_switch(env)
    claimed = _key_of(paths, base)
    if claimed == _key_of(paths, env):
        return env
    cache = cachefile.load(paths.cache_dir, CACHE_FILE)
    if not isinstance(cache, dict) or cache.get("key") != claimed:
        return env
    out = dict(env)  # only the inputs the key holds: LD_LIBRARY_PATH & co. stay as they are
    for name in ENV_KEYS:
        if base.get(name) is None:
            out.pop(name, None)
        else:
            out[name] = base[name]
    return out


def read_cache(paths: "Paths", env: "Env", cache: object) -> "dict | None":
    """`cache` if every input it depends on is unchanged, else None; keyed by the environment before
    the switch (a `use` keeps it valid) or, where that record was not believed, as it is."""
    if not isinstance(cache, dict) or cache.get("format") != CACHE_FORMAT or not _shape_ok(cache):
        return None
    keys = (_key_of(paths, envstate.before_switch(env)), _key_of(paths, env))
    if cache.get("key") not in keys or not cachefile.unchanged(cache["watched"]):
        return None
    return cache


def _shape_ok(cache: dict) -> bool:
    """A file with our format number but another shape (another build, a bit flip) is foreign."""
    records, watched, fragments = cache.get("records"), cache.get("watched"), cache.get("list_json")
    return (isinstance(watched, dict) and isinstance(records, list) and isinstance(cache.get("key"), tuple)
            and all(isinstance(k, str) and (v is None or isinstance(v, tuple)) for k, v in watched.items())
            and isinstance(fragments, list) and len(fragments) == len(records)
            and all(isinstance(f, str) and f.startswith("{") for f in fragments)
            and all(isinstance(r, dict) and RECORD_KEYS.issubset(r) and _record_ok(r) for r in records)
            and all(cache.get(k) is None or isinstance(cache.get(k), str) for k in ("system_real", "default_real")))


def _record_ok(record: dict) -> bool:
    strings = ("root", "real", "status")
    lists = ("sources", "problems", "bin_dirs", "lib_dirs")
    # version None: a broken root (a dangling link), which must not make the whole cache foreign
    return (all(isinstance(record[k], str) for k in strings) and record["status"] in STATUSES
            and (record["version"] is None or isinstance(record["version"], str))
            and all(isinstance(record[k], list) and all(isinstance(i, str) for i in record[k]) for k in lists)
            and (record["nvcc"] is None or isinstance(record["nvcc"], str)))


def load(paths: "Paths", env: "Env", refresh: bool = False) -> dict:
    """The registry as a dict: records (newest first), system_real, default_real, source_order."""
    stored = cachefile.load(paths.cache_dir, CACHE_FILE)
    cache = None if refresh else read_cache(paths, env, stored)
    if cache is not None:
        return cache
    from cudaswitch import config

    old = stored.get("nvcc_probes") if isinstance(stored, dict) else None  # nvcc's answers, keyed by its identity
    old = old if isinstance(old, dict) else {}
    probes = {k: v for k, v in old.items() if isinstance(k, str) and isinstance(v, dict)}
    cache = discover(paths, env, config.load(paths), probes)
    cachefile.store(paths.cache_dir, CACHE_FILE, cache)  # unwritable: speed lost, not correctness
    return cache


def discover(paths: "Paths", env: "Env", config: dict, nvcc_probes: dict) -> dict:
    from cudaswitch.registry import layouts, views
    from cudaswitch.request import SOURCES, select, ToolkitRequest
    from cudaswitch.registry.sources import Scan, source_modules, system

    probe_timeout = float(config.get("probe_timeout", PROBE_TIMEOUT))
    base = scanned_env(paths, env)
    scan = Scan(paths, absolute_only(base), config, probe_timeout)
    order = [s for s in config.get("source_order", SOURCES) if s in SOURCES]
    order += [s for s in SOURCES if s not in order]
    by_real: "dict[str, ToolkitRecord]" = {}
    modules = source_modules()
    for name in order:
        for candidate in modules[name].find(scan):
            _merge(by_real, candidate, scan, nvcc_probes, layouts, views)
    records = sorted(by_real.values(), key=lambda r: version_tuple(r["version"]), reverse=True)
    system_real = system.system_default(scan)
    default_real = system_real
    if config.get("default"):
        chosen = select(ToolkitRequest.parse(config["default"]), records, order, system_real)
        default_real = chosen["real"] if chosen else None
    scan.watch(paths.config_file)
    return {
        "format": CACHE_FORMAT, "key": _key_of(paths, base), "watched": scan.watched, "records": records,
        "nvcc_probes": nvcc_probes, "system_real": system_real, "default_real": default_real,
        "source_order": order, "default_request": config.get("default"), "list_json": list_json(records),
    }


def list_json(records: "list[ToolkitRecord]") -> "list[str]":
    """Each record's `list --json` object without its closing brace: a warm `list --json` adds the
    shell-dependent "default" and "active" and never imports json (rendered once per discovery)."""
    import json

    from cudaswitch.toolkit import Toolkit

    fragments = []
    for record in records:
        item = Toolkit(record).public()
        del item["default"], item["active"]
        fragments.append(json.dumps(item, ensure_ascii=False)[:-1])
    return fragments


PATH_VARS = ("PATH", "MODULEPATH")
DIR_VARS = ("HOME", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "CONDA_EXE", "VIRTUAL_ENV", "LMOD_CMD", "LMOD_DIR",
            "MODULES_CMD", "MODULESHOME", "SPACK_ROOT", "SPACK_USER_CONFIG_PATH", "SPACK_SYSTEM_CONFIG_PATH")


def absolute_only(env: "Env") -> "dict[str, str]":
    """The environment without relative paths: `PATH=$PATH:bin` or CUDA_HOME=. would name a dir of
    whatever project the shell is in; the registry lists what is on the host wherever one stands."""
    out = dict(env)
    for var in PATH_VARS:
        if var in out:
            out[var] = os.pathsep.join(d for d in out[var].split(os.pathsep) if d.startswith("/"))
    for var in DIR_VARS:
        if var in out and not out[var].startswith("/"):
            del out[var]
    return out


def _merge(by_real: "dict[str, ToolkitRecord]", candidate: "Candidate", scan: "Scan", nvcc_probes: dict,
           layouts: "ModuleType", views: "ModuleType") -> None:
    """Add `candidate` by real path: a root found again gains a source, a new one is described."""
    if candidate.dangling:
        real = "dangling:" + candidate.root
        record = by_real.get(real) or layouts.broken(candidate.root, real, candidate.dangling)
    else:
        if candidate.source == "managed":
            # the data dir is this user's on this machine, never re-rooted under CUDASWITCH_ROOT
            real, error = os.path.realpath(candidate.root), None
        else:
            real, error = resolve_in_root(scan.paths, scan.paths.unhost(candidate.root))
        record = by_real.get(real)
        if record is None:
            record = _describe(candidate, real, error, scan, nvcc_probes, layouts)
            _add_view(record, scan, views)
            for name in VERSION_FILES:  # rewritten in place (cp -p, rsync -a): the dir's mtime stays
                scan.watch(os.path.join(real, name))
    if candidate.source not in record["sources"]:
        record["sources"].append(candidate.source)
    record["origins"].setdefault(candidate.source, candidate.origin)
    by_real[real] = record


def _add_view(record: "ToolkitRecord", scan: "Scan", views: "ModuleType") -> None:
    """An isolated toolkit (inside a conda env) is switched through its view of CUDA-only links."""
    if record["isolated"] and record["status"] != "broken":
        view_bin, view_lib = views.build(scan.paths.cache_dir, record)
        record["env_bin"], record["env_lib"] = [view_bin], [view_lib]
        scan.watch(view_bin)  # a cleaned cache dir must not leave `use` pointing at nothing


def _describe(candidate: "Candidate", real: str, error: "str | None", scan: "Scan", nvcc_probes: dict,
              layouts: "ModuleType") -> "ToolkitRecord":
    root = candidate.root
    if error:
        return layouts.broken(root, real, error)
    try:
        entries = os.listdir(real)
    except OSError as exc:
        return layouts.broken(root, real, "cannot read %s: %s" % (root, exc.strerror))
    if not entries:
        return layouts.broken(root, real, "empty directory (remains of an uninstalled toolkit?)")
    if scan.paths.root != "/" and candidate.source != "managed":  # managed: this host's own data dir
        escape = link_leaving(real, scan.paths.root)
        if escape:  # nothing of it is read or run: it would be the auditing host's
            return layouts.broken(root, real, "a link leaves the audited root (not followed): " + escape,
                                  outside_root=True)
    # config `probe_exec = false` (audit --root): binaries in an image may be for another host
    return layouts.describe(root, real, candidate.layout, scan.timeout, nvcc_probes,
                            candidate.hint_version, run_nvcc=scan.config.get("probe_exec", True))

"""Core operations of the registry commands. They return data; cudaswitch/commands/ renders it."""

import os

from cudaswitch.switch import envdiff
from cudaswitch.errors import CudaSwitchError, UsageError
from cudaswitch.registry.resolve import resolve
from cudaswitch.toolkit import Toolkit


def active_root(env):
    """The toolkit root this shell uses: the one cudaswitch switched to, else the one its first nvcc
    or CUDA_HOME belongs to (hand-set, a module, a conda env); None when there is none."""
    state = envdiff.read_state(env)
    if state:
        return state["root"]
    from cudaswitch.switch.active import shell_root

    return shell_root(env)


def in_use(env):
    """A predicate on records: is this the toolkit this shell uses? Computed once per command (the
    root's realpath too), so `list` on a host with hundreds of toolkits resolves one path, not one each."""
    root = active_root(env)
    if root is None:
        return lambda record: False
    real = os.path.realpath(root)
    return lambda record: record["root"] == root or record["real"] == real


def list_items(registry, env, runs=None, picks=None):
    """`list`'s objects; `runs`: {root: verdict} of verify/runs_here (whether this driver runs it);
    `picks`: {root: the partial requests ("12", "latest") that choose it}."""
    active, default = in_use(env), registry["default_real"]
    items = [Toolkit(r).public(default=r["real"] == default, active=active(r)) for r in registry["records"]]
    for item in items if runs else ():
        verdict = runs.get(item["root"])
        item["runs_here"] = {"runs": verdict["runs"], "why": verdict["why"]} if verdict else None
    for item in items if picks is not None else ():
        item["picked_by"] = picks.get(item["root"], [])
    return items


def list_json_text(registry, env, runs=None, picks=None):
    """`list --json` as one line of JSON text: the same objects as list_items, from the fragments
    discovery rendered (registry/discover.py) and runs_here cached, closed with "default" and "active"."""
    active, default = in_use(env), registry["default_real"]
    runs, picks = runs or {}, picks or {}
    return "[%s]" % ", ".join('%s, %s"picked_by": [%s], "default": %s, "active": %s}' % (
        text, runs[record["root"]]["json"] + ", " if record["root"] in runs else "",
        ", ".join('"%s"' % p for p in picks.get(record["root"], ())),  # digits or "latest": nothing to escape
        _json_bool(record["real"] == default), _json_bool(active(record)))
        for text, record in zip(registry["list_json"], registry["records"]))


def _json_bool(value):
    return "true" if value else "false"


def current_record(registry, env):
    """The toolkit in effect without a request: the one this shell uses, else the default."""
    active, records = in_use(env), registry["records"]
    found = next((r for r in records if active(r)), None) or next(
        (r for r in records if r["real"] == registry["default_real"]), None)
    if found:
        return found
    raise CudaSwitchError("no toolkit is active and there is no default",
                          "give a request, or set one with `cudaswitch global VERSION`")


def which(registry, env, request=None, tool=None):
    record = current_record(registry, env) if request in (None, "current") else resolve(registry, request)
    if tool is None:
        return record["root"]
    if "/" in tool or tool in (".", ".."):
        raise UsageError("a tool is a plain name such as nvcc or ptxas, not %r" % tool)
    for directory in record["bin_dirs"] + record["lib_dirs"]:
        path = os.path.join(directory, tool)
        if os.path.exists(path):
            return path
    raise CudaSwitchError("%s has no %s" % (record["root"], tool),
                          "its status is %s: %s" % (record["status"], "; ".join(record["problems"]) or "ok"))


def set_global(paths, registry, request):
    from cudaswitch import config

    if request is None:
        config.update(paths, default=None)
        return "default toolkit removed from %s" % paths.config_file
    if request.strip().startswith(("/", ".", "~")):  # before resolving: a path is refused, found or not
        raise UsageError("the default is a version request, not a path", "register paths under `toolkits`")
    record = resolve(registry, request)
    config.update(paths, default=request)
    return "default toolkit: %s (%s at %s)" % (request, record["version"], record["root"])

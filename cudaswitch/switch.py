"""Switching: what `use`, `off`, `hook-env` and `current` decide. Returns data (diffs, dicts);
fastpath.py renders. Import-light on purpose: runs on every `use` and on entering a project."""

import os

from cudaswitch import envdiff, registry
from cudaswitch.errors import CudaSwitchError
from cudaswitch.request import ToolkitRequest, select
from cudaswitch.verify.hostcc import switched  # envdiff.switched plus the host compiler choice


def load(paths, env):
    return registry.load(paths, env)


def find_record(reg, request):
    found = select(request, reg["records"], reg["source_order"], reg["system_real"])
    if found is None:
        from cudaswitch.resolve import not_found

        raise not_found(reg, request)
    return found


def use(reg, env, request_text, origin="shell", source_file=None):
    """(record, diff) switching `env` to the toolkit the request selects."""
    request = ToolkitRequest.parse(request_text, allow_path=(origin == "shell"))
    record = find_record(reg, request)
    entries = envdiff.path_entries(record)
    if any(os.pathsep in d for d in entries["PATH"] + entries["LD_LIBRARY_PATH"]):
        raise CudaSwitchError("%s cannot go on PATH: its path holds %r" % (record["root"], os.pathsep))
    new = switched(env, record, origin, source_file)
    return record, envdiff.diff(env, new)


def off(env):
    """The diff back to the environment from before cudaswitch (None when nothing is active)."""
    if envdiff.read_state(env) is None:
        return None
    return envdiff.diff(env, envdiff.pristine(env))


def hook_env(reg_loader, env, cwd):
    """What the hook applies on a project-file change: (record or None, diff or None).

    An explicit `use` in this shell wins until `off`; otherwise the nearest project file, else the
    global default, else nothing (leaving a project restores what was there before it)."""
    from cudaswitch import projectfile

    state = envdiff.read_state(env)
    if state and state["origin"] == "shell":
        return None, None
    found = projectfile.find(cwd)
    if found:
        path, text = found
        request = projectfile.parse_request(path, text)
        reg = reg_loader()
        record = find_record(reg, request)
        if state and state["root"] == record["root"] and state.get("file") == path:
            return record, None
        return record, envdiff.diff(env, switched(env, record, "project", path))
    reg = reg_loader()
    if reg.get("default_request"):
        record = next((r for r in reg["records"] if r["real"] == reg["default_real"]), None)
        if record and not (state and state["origin"] == "global" and state["root"] == record["root"]):
            return record, envdiff.diff(env, switched(env, record, "global"))
        if record:
            return record, None
    return None, off(env)


def current(reg_loader, env, cwd):
    """The toolkit in effect and why: shell, project (file), global, system, or none."""
    state = envdiff.read_state(env)
    if state:
        return {"version": state["version"], "root": state["root"], "reason": state["origin"],
                "file": state.get("file")}
    from cudaswitch import projectfile

    found = projectfile.find(cwd)
    reg = reg_loader()
    if found:
        record = find_record(reg, projectfile.parse_request(*found))
        return {"version": record["version"], "root": record["root"], "reason": "project",
                "file": found[0], "applied": False}
    for record in reg["records"]:
        if record["real"] == reg["default_real"]:
            reason = "global" if reg.get("default_request") else "system"
            return {"version": record["version"], "root": record["root"], "reason": reason, "file": None}
    return {"version": None, "root": None, "reason": "none", "file": None}

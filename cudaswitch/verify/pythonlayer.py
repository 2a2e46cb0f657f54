"""The Python layer: which interpreters `python` and `python3` are and which one has torch, what `pip
check` would print, a distribution installed twice, and for "No module named X" the known
environments that have X. Distributions are read by pyenv_probe.py in the user's interpreter;
environments by globbing their site-packages, no process each."""

import glob
import json
import os
import re
import weakref

from cudaswitch.pathsearch import which
from cudaswitch.safeio import read_or_none
from cudaswitch.verify import loaderdirs
from cudaswitch.verify.checkregistry import Ask, registered
from cudaswitch.verify.compat import check
from cudaswitch.verify.runner import run_script

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from cudaswitch.verify.host import Host

SHOWN = 5  # conflicts named in one message; the rest are counted
MISSING = re.compile(r"No module named '?([A-Za-z_][\w.]*)")
KERNEL_DIRS = ("/usr/local/share/jupyter/kernels", "/usr/share/jupyter/kernels")
_REPORTS: "weakref.WeakKeyDictionary[Host, dict]" = weakref.WeakKeyDictionary()


def report(host: "Host", python: "str | None", modules: tuple = ()) -> dict:
    """What pyenv_probe says in `python` (once per host, interpreter and modules), or {"error"}."""
    if not python:
        return {"error": "no python3 on PATH"}
    cache = _REPORTS.setdefault(host, {})
    key = (python,) + modules
    if key not in cache:
        payload, error = run_script(python, "pyenv_probe.py", list(modules), host.env, host.timeout)
        payload = payload or {"error": error}
        cache[key] = {"error": payload["fatal"]} if "fatal" in payload else payload
    return cache[key]


def _named(path: str, got: dict) -> str:
    """An interpreter as PATH names it, and the one it really starts where a wrapper or link differs."""
    return path if got.get("python") in (None, path) else "%s, which runs %s" % (path, got["python"])


def _cannot(check_id: str, why: str) -> list:
    return [check(check_id, "info", "cannot check %s because %s" % (check_id.split(".", 1)[1], why), None)]


@registered("python.interpreters", layer="framework", shown_by=("doctor", "verify"))
def interpreters(host: "Host", ask: Ask) -> list:
    """`python3` and `python` on PATH: one interpreter or two, and which of them has torch."""
    python3, plain = host.python, which("python", host.env)
    if not python3:
        return _cannot("python.interpreters", "no python3 on PATH")
    named = [("python3", python3)]
    if plain and os.path.realpath(plain) != os.path.realpath(python3):
        named.append(("python", plain))
    seen = [(name, path, report(host, path)) for name, path in named]
    if len(seen) == 2 and seen[1][2].get("python") and seen[1][2].get("python") == seen[0][2].get("python"):
        seen = seen[:1]  # two wrappers or links that start the same interpreter
    facts = {name: {"path": path, "executable": got.get("python"), "version": got.get("python_version"),
                    "prefix": got.get("prefix"), "torch": got.get("torch"), "error": got.get("error")}
             for name, path, got in seen}
    words = "; ".join("%s is %s (%s)" % (name, _named(path, got), got.get("error") or "Python %s, torch %s" % (
        got.get("python_version"), "in " + got["torch"] if got.get("torch") else "not installed"))
        for name, path, got in seen)
    with_torch = [name for name, _, got in seen if got.get("torch")]
    if len(seen) == 2 and len(with_torch) == 1:
        other = "python" if with_torch == ["python3"] else "python3"
        return [check("python.interpreters", "warning", "%s: only `%s` has torch, so a script run with `%s` fails "
                      "with \"No module named 'torch'\"" % (words, with_torch[0], other), "run scripts with `%s` "
                      "(or its full path), or install torch into the other one" % with_torch[0], **facts)]
    return [check("python.interpreters", "ok" if not any(got.get("error") for _, _, got in seen) else "info",
                  words if len(seen) == 2 else words + (" (`python` is the same interpreter)" if plain else
                                                        " (no `python` on PATH)"), None, **facts)]


@registered("python.requirements", layer="deps", shown_by=("doctor", "verify"))
def requirements(host: "Host", ask: Ask) -> list:
    """What `pip check` prints for the user's interpreter, read from its metadata."""
    python, got = host.python, report(host, host.python)
    if got.get("error") or got.get("conflicts") is None:
        return _cannot("python.requirements", got.get("error") or "neither packaging nor pip imports in %s" % python)
    found = got["conflicts"]
    if not found:
        return [check("python.requirements", "ok", "%s: the requirements of its %d distributions are met"
                      % (python, got.get("distributions") or 0), None, conflicts=[])]
    lines = [pip_check_line(c) for c in found]
    more = " (and %d more)" % (len(lines) - SHOWN) if len(lines) > SHOWN else ""
    return [check("python.requirements", "warning", "%s has %d broken requirement%s: %s%s" % (
        python, len(lines), "s" if len(lines) > 1 else "", " ".join(lines[:SHOWN]), more),
        "install the versions they name into this environment (`%s -m pip install 'NAME SPEC'`)" % python,
        conflicts=found)]


def pip_check_line(conflict: dict) -> str:
    """One finding in pip check's own words."""
    if conflict["have"] is None:
        return "%s %s requires %s, which is not installed." % (conflict["name"], conflict["version"],
                                                              conflict["requires"])
    return "%s %s has requirement %s, but you have %s %s." % (conflict["name"], conflict["version"],
                                                             conflict["requires"], conflict["needs"], conflict["have"])


@registered("python.duplicates", layer="deps", shown_by=("doctor", "verify"))
def duplicates(host: "Host", ask: Ask) -> list:
    """A distribution twice on sys.path: the first imports, and tools disagree about which version is installed."""
    python, got = host.python, report(host, host.python)
    if got.get("error"):
        return _cannot("python.duplicates", got["error"])
    twice = got.get("duplicates") or {}
    if not twice:
        return [check("python.duplicates", "ok", "%s: each distribution is installed once" % python, None,
                      duplicates={})]
    text = "; ".join("%s %s" % (name, ", ".join("%s in %s%s" % (d["version"], d["path"], " (imported)" if i == 0
                                                                  else "") for i, d in enumerate(found)))
                     for name, found in twice.items())
    return [check("python.duplicates", "warning", "installed more than once on %s's sys.path: %s" % (python, text),
                  "remove the copies that are not imported (`%s -m pip uninstall NAME` until one is left, then "
                  "reinstall it), or take the other directory off PYTHONPATH" % python, duplicates=twice)]


@registered("python.module_found", layer="framework", shown_by=("explain",))
def module_found(host: "Host", ask: Ask) -> list:
    """"No module named X": this shell's interpreter, whether it has X, and the known environments that do."""
    match = MISSING.search(ask.text)
    if not match:
        return []
    name = match.group(1).split(".")[0]
    python = host.python
    got = report(host, python, (name,))
    origin = (got.get("modules") or {}).get(name)
    others = [p for p in envs_with_module(host, name) if not python or not python.startswith(p.rstrip("/") + "/")]
    where = "environments that have %s: %s" % (name, ", ".join(others) or "none found")
    facts = {"module": name, "python": python, "origin": origin, "envs": others}
    if origin and python:
        return [check("python.module_found", "ok", "python3 here (%s) imports %s from %s: the failing command ran "
                      "another interpreter; %s" % (_named(python, got), name, origin, where), None, **facts)]
    asked = "python3 here (%s) has no %s" % (_named(python, got), name) if python else "no python3 on PATH"
    return [check("python.module_found", "error", "%s (%s); %s" % (asked, got.get("error") or "not on its sys.path",
                  where), "run the interpreter of an environment that has it (%s), or `%s -m pip install` it"
                  % (others[0] if others else "none known here", python or "python3"), **facts)]


def envs_with_module(host: "Host", name: str) -> list:
    """Prefixes of known environments whose site-packages hold top-level module `name`."""
    out: list = []
    patterns = [os.path.join(name, "__init__.py"), name + ".py", name + ".*.so", os.path.join(name, "")]
    for prefix in [loaderdirs.env_path(host.paths, p) for p in known_prefixes(host) if p and os.path.isabs(p)]:
        site = os.path.join(glob.escape(prefix), "lib", "python3*", "site-packages")
        if any(glob.glob(os.path.join(site, glob.escape(p) if "*" not in p else p)) for p in patterns):
            if host.paths.unhost(prefix) not in out:
                out.append(host.paths.unhost(prefix))
    return out


def known_prefixes(host: "Host") -> list:
    """The active venv and conda env, conda's environments.txt, registry envs and Jupyter kernels' interpreters."""
    prefixes = [host.env.get("VIRTUAL_ENV"), host.env.get("CONDA_PREFIX")]
    home = host.env.get("HOME") or os.path.expanduser("~")
    environments = host.paths.host(os.path.join(home, ".conda", "environments.txt"))
    prefixes += (read_or_none(environments, 1 << 20) or b"").decode("utf-8", "replace").split()
    for record in host.registry.get("records") or []:
        root = record.get("root") or ""
        prefixes.append(root.split("/lib/python", 1)[0] if "/site-packages/" in root else root)
    return prefixes + [os.path.dirname(os.path.dirname(p)) for p in kernel_pythons(host)]


def kernel_pythons(host: "Host") -> list:
    """argv[0] of every kernelspec in the user's and the system's Jupyter data dirs."""
    home = host.env.get("HOME") or os.path.expanduser("~")
    user = host.env.get("JUPYTER_DATA_DIR") or os.path.join(
        host.env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), "jupyter")
    out = []
    for spec in sorted(glob.glob(os.path.join(glob.escape(host.paths.host(os.path.join(user, "kernels"))), "*",
                                              "kernel.json"))) + sorted(
            p for d in KERNEL_DIRS for p in glob.glob(os.path.join(host.paths.host(d), "*", "kernel.json"))):
        try:
            argv = json.loads((read_or_none(spec, 1 << 20) or b"{}").decode("utf-8", "replace")).get("argv")
        except (ValueError, AttributeError):
            continue
        if isinstance(argv, list) and argv and isinstance(argv[0], str) and os.path.isabs(argv[0]):
            out.append(argv[0])
    return out

"""What this shell really uses: the toolkit of the first `nvcc` on PATH and of CUDA_HOME, and why
each is there (a switch, a module, a conda env, the user's own exports, the system default), for
`current` and doctor. Stats and one registry read: no process, no heavy import."""

import os

from cudaswitch.switch.standins import is_stand_in
from cudaswitch import envstate
from cudaswitch.pathsearch import which
from cudaswitch.safeio import read_or_none
from cudaswitch.switch.toolkitdirs import Owner, known_roots

TYPE_CHECKING = False  # typing costs ~12 ms (re, collections, functools) of list; mypy reads this name the same

if TYPE_CHECKING:
    from cudaswitch.toolkit import Env

MODULE_PACKAGES = ("cuda", "cudatoolkit", "cuda-toolkit", "nvhpc-cuda")
SYSTEM_BIN_DIRS = ("/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/usr/local/sbin")
WHY = {"conda": "conda env %s", "project": "project %s", "module": "module %s", "hand-set": "hand-set %s",
       "system": "system default"}  # how `current` names each reason a toolkit is there


def first_nvcc(env: "Env") -> "str | None":
    """The first executable nvcc on PATH (absolute entries only); None when it is a switch's stand-in."""
    found = which("nvcc", env)
    return None if is_stand_in(found) else found


def wrapped_nvcc(path: str) -> str:
    """The nvcc a small `#!/bin/sh exec /opt/cuda/bin/nvcc "$@"` wrapper runs, else its real path."""
    real = os.path.realpath(path)
    head = read_or_none(real, 4095) or b""  # safeio's read: a FIFO called nvcc does not hang `current`
    if head.startswith(b"#!") and b"\0" not in head:
        for word in head.replace(b'"', b" ").replace(b"'", b" ").split():
            if word.startswith(b"/") and word.endswith(b"/nvcc") and word != real.encode():
                return os.path.realpath(word.decode("utf-8", "surrogateescape"))
    return real


def nvcc_root(owner: Owner, env: "Env", nvcc: str) -> "str | None":
    """The toolkit an nvcc belongs to: its dir's, its wrapper target's, or the active conda env
    (whose prefix is the toolkit root, though Owner never takes a conda env off PATH)."""
    root = owner(os.path.dirname(nvcc)) or owner(os.path.dirname(wrapped_nvcc(nvcc)))
    prefix = (env.get("CONDA_PREFIX") or "").rstrip("/")
    if root is None and prefix and nvcc.startswith(prefix + "/"):
        return prefix
    return root


def loaded_cuda_modules(env: "Env") -> "list[str]":
    """The loaded CUDA modules (cuda/12.9) from LOADEDMODULES, which both module systems keep: no process."""
    names = [m for m in (env.get("LOADEDMODULES") or "").split(":") if m]
    return [m for m in names if (m.rpartition("/")[0] or m).lower() in MODULE_PACKAGES]


class Facts:
    """The toolkit facts of one environment, matched against the registry's records."""

    def __init__(self, reg: dict, env: "Env") -> None:
        self.reg, self.env = reg, env
        self.state = envstate.read_state(env)
        self.owner = Owner(known_roots(reg), env)
        self.modules = loaded_cuda_modules(env)
        self.records: dict = {}  # "nvcc", "CUDA_HOME" -> the record each fact names (or None)

    def record_for(self, root: "str | None") -> "dict | None":
        if not root:
            return None
        real = os.path.realpath(root)
        for record in self.reg["records"]:
            if root in (record["root"], record.get("real")) or real == record.get("real"):
                return record
            views = (record.get("env_bin") or []) + (record.get("env_lib") or [])
            if root in views or real in views:
                return record
        return None

    def nvcc(self) -> "dict | None":
        path = first_nvcc(self.env)
        if path is None:
            return None
        root = nvcc_root(self.owner, self.env, path)
        record = self.records["nvcc"] = self.record_for(root)  # a view dir (conda toolkits) is a known root
        root = record["root"] if record else root
        system = ("system", path) if os.path.dirname(path) in SYSTEM_BIN_DIRS else ("hand-set", "PATH")
        return self._fact("nvcc", path, root, record,
                          self._why_switched(record) or self._why_outside(root, record) or system)

    def cuda_home(self) -> "dict | None":
        value = self.env.get("CUDA_HOME")
        if not value:
            return None
        root = self.owner(value)
        record = self.records["CUDA_HOME"] = self.record_for(root or value)
        fact = self._fact("CUDA_HOME", value, record["root"] if record else root, record,
                          self._why_scalar("CUDA_HOME", value, root, record))
        fact["toolkit"] = bool(root or record)  # False: CUDA_HOME names no toolkit at all
        return fact

    def _fact(self, what: str, value: str, root: "str | None", record: "dict | None",
              why: "tuple[str, str | None]") -> dict:
        reason, detail = why
        return {"what": what, "value": value, "root": root, "version": record["version"] if record else None,
                "reason": reason, "detail": detail}

    def _why_switched(self, record: "dict | None") -> "tuple[str, str | None] | None":
        if self.state and record and self.state["root"] == record["root"]:
            return self.state["origin"], self.state.get("file")
        return None

    def _why_outside(self, root: "str | None", record: "dict | None") -> "tuple[str, str] | None":
        """(reason, detail) when a loaded module or the active conda env put `root` there."""
        module = record and (record.get("origins") or {}).get("module")
        if module and module in self.modules:
            return "module", module
        prefix = self.env.get("CONDA_PREFIX")
        if prefix and root and (root == prefix or root.startswith(prefix.rstrip("/") + "/")):
            return "conda", self.env.get("CONDA_DEFAULT_ENV") or os.path.basename(prefix)
        return None

    def _why_scalar(self, name: str, value: str, root: "str | None", record: "dict | None") -> "tuple[str, str | None]":
        state = self.state
        if state and state["scalars"].get(name, (None, None))[1] == value:
            return state["origin"], state.get("file")
        if state and name not in state["scalars"] and self._why_switched(record):
            return state["origin"], state.get("file")  # it already named the toolkit switched to
        return self._why_outside(root, record) or ("hand-set", name)

    def primary(self) -> "tuple[dict | None, dict | None, dict | None]":
        """(nvcc fact, CUDA_HOME fact, the deciding one: the first nvcc, else a CUDA_HOME naming a toolkit)."""
        nvcc, home = self.nvcc(), self.cuda_home()
        return nvcc, home, nvcc or (home if home and home["toolkit"] else None)


def active_record(reg: dict, env: "Env") -> "dict | None":
    """The one answer to "which toolkit is active": the record of the first nvcc on PATH (through a view
    dir, a wrapper or a link), else of CUDA_HOME; None when that is no known toolkit."""
    facts = Facts(reg, env)
    primary = facts.primary()[2]
    return facts.records.get(primary["what"]) if primary else None


def describe(reg: dict, env: "Env") -> dict:
    """{"version", "root", "reason", "detail", "nvcc", "cuda_home", "agree", "disagreements"} of this shell."""
    facts = Facts(reg, env)
    nvcc, home, primary = facts.primary()
    if primary is None:
        record = next((r for r in reg["records"] if r["real"] == reg.get("system_real")), None)
        primary = {"what": "system default", "value": None, "root": record["root"] if record else None,
                   "version": record["version"] if record else None,
                   "reason": "system" if record else "none", "detail": None}
    disagree = []
    if home and not home["toolkit"]:
        disagree = [f for f in (nvcc, home) if f]  # torch and CMake would take a CUDA_HOME without CUDA
    elif nvcc and home and os.path.realpath(nvcc["root"] or "") != os.path.realpath(home["root"]):
        disagree = [nvcc, home]
    return {"version": primary["version"], "root": primary["root"], "reason": primary["reason"],
            "detail": primary["detail"], "file": primary["detail"] if primary["reason"] == "project" else None,
            "nvcc": nvcc, "cuda_home": home, "agree": not disagree, "disagreements": disagree}


def why_text(fact: dict) -> str:
    """`shell`, `project FILE`, `module cuda/12.9`, `conda env NAME`, `hand-set PATH`, `system default`."""
    reason, detail = fact["reason"], fact.get("detail")
    if reason in ("project", "module") and not detail:
        return reason
    form = WHY.get(reason, reason)
    return form % detail if "%s" in form else form


def lines(info: dict, pending_note: str = "not applied in this shell (is the hook loaded?)") -> "list[str]":
    """`current`'s human output: what is used and why, then each disagreeing part and pin not applied."""
    if info["root"] is None:
        out = ["none (no nvcc on PATH, no CUDA_HOME, no system default)"]
    else:
        out = ["%s %s (%s)" % (info["version"] or "unknown version", info["root"], why_text(info))]
    for fact in info["disagreements"]:
        label = "nvcc on PATH" if fact["what"] == "nvcc" else fact["what"]
        if fact.get("toolkit") is False:
            out.append("  %s: %s is no toolkit root (%s)" % (label, fact["value"], why_text(fact)))
        else:
            out.append("  %s: %s %s (%s)" % (label, fact["version"] or "unknown toolkit", fact["value"],
                                            why_text(fact)))
    for pin in info.get("pending", ()):
        where = "project %s" % pin["file"] if pin["kind"] == "project" else "global default"
        if pin["error"]:  # the hook refuses it too: no prompt will apply it
            out.append("  %s asks for %s: %s; not applied (the hook refuses it until that is fixed)"
                       % (where, pin["request"], pin["error"]))
        else:
            out.append("  %s asks for %s: %s %s; %s" % (where, pin["request"], pin["version"], pin["root"],
                                                       pending_note))
    return out

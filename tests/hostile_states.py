"""A seeded generator of hostile CUDASWITCH_STATE values: what anyone who can set one environment
variable (ssh SendEnv, `docker run -e`, a CI step, an rc file of a shared account) can hand every
`off`, `use` and hook prompt. Each case is (label, value); names and values carry `touch CANARY`
in every form a shell or prompt would run, so "nothing ran" is one `exists()`.

`check_cases` runs the decoder and the switching logic in-process on the bulk of them (in a child
with a memory cap, called by the test), renders every diff in every output format, and writes the
bash, zsh and fish texts to files for real shells to evaluate."""

import binascii
import json
import marshal
import os
import random
import sys
import time
from cudaswitch import envstate

# Where `off` would write them: names that are not identifiers, and identifiers that are code.
BAD_NAMES = ("a;touch {c};b", "x$(touch {c})", "`touch {c}`", "A B", "A\ntouch {c}", "1A", "", "A=B",
             "PATH;touch {c}", "é", "A\x00B", "-n", "A\x1b[2J", "PROMPT_COMMAND", "BASH_ENV", "ENV", "PS1",
             "LD_PRELOAD", "PYTHONSTARTUP", "fish_user_paths", "CUDASWITCH_STATE", "BASH_FUNC_x%%")
CODE_VALUES = ("touch {c}", "$(touch {c})", "`touch {c}`", "'; touch {c}; '", '"; touch {c}; "', "\ntouch {c}\n",
               "\\'; touch {c} #", "x\x00y", "$(touch {c})\x1b]0;t\x07")
WRONG_TYPES = (5, None, "x", [], {}, (), ("a",), ("a", "b", "c", "d"), True, 1.5, b"x", -1, 2 ** 40, {"a": 1},
               frozenset({"a"}), 1j, Ellipsis)
PLACES = (("v",), ("root",), ("version",), ("origin",), ("file",), ("scalars",), ("scalars", "CUDA_HOME"),
          ("scalars", "CUDA_HOME", 0), ("scalars", "CUDA_HOME", 1), ("lists",), ("lists", "PATH"),
          ("lists", "PATH", 0), ("lists", "PATH", 2), ("modules",), ("modules", "outer"), ("modules", "unloaded"),
          ("modules", "unloaded", 0), ("modules", "kind"), ("modules", "dir"), ("modules", "loaded"),
          ("unexported",))


def encode(obj):
    return binascii.b2a_base64(marshal.dumps(obj), newline=False).decode("ascii")


def decode(value):
    """A state our own `use` wrote (trusted here: the test asked for it) as the object it holds."""
    return marshal.loads(binascii.a2b_base64(value))


def raw(data):
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def with_modules(state):
    """`state` with the module record a `use` that swapped cuda/13.1 out writes."""
    return dict(state, modules={"kind": "lmod", "unloaded": ["cuda/13.1"], "dir": "/nonexistent/modulefiles",
                                "outer": {"PATH": "/usr/bin", "CUDA_HOME": None}}, origin="project")


def _replaced(obj, place, value):
    """A copy of `obj` with the item at `place` (a key path; tuples are copied as tuples) set to `value`."""
    if not place:
        return value
    head, rest = place[0], place[1:]
    if isinstance(obj, tuple):
        items = list(obj)
        items[head] = _replaced(items[head], rest, value)
        return tuple(items)
    if isinstance(obj, list):
        items = list(obj)
        items[head] = _replaced(items[head], rest, value)
        return items
    return dict(obj, **{head: _replaced(obj.get(head), rest, value)}) if isinstance(obj, dict) else obj


def _named(state, where, name, value):
    if where == "scalars":
        return dict(state, scalars={name: (value, None)})
    if where == "lists":
        return dict(state, lists={name: (value, None, 0)})
    if where == "outer":
        return _replaced(state, ("modules", "outer"), {name: value})
    return dict(state, unexported=[name])


def name_cases(good, canary):
    for name in BAD_NAMES:
        name = name.format(c=canary)
        for where in ("scalars", "lists", "outer", "unexported"):
            yield "name %r in %s" % (name, where), encode(_named(good, where, name, "touch %s" % canary))


def value_cases(good, canary):
    """Code in values is only data: quoted for each reader (a NUL makes the state foreign)."""
    for value in CODE_VALUES:
        value = value.format(c=canary)
        yield "value %r" % value, encode(dict(good, scalars={"CUDA_HOME": (value, None)},
                                              lists={"PATH": (value, good["lists"]["PATH"][1], 1)}))
        yield "root %r" % value, encode(dict(good, root=value, file=value))


def type_cases(good):
    for place in PLACES:
        for value in WRONG_TYPES:
            yield "%s = %r" % ("/".join(map(str, place)), value), encode(_replaced(good, place, value))


def bomb_cases():
    """Nesting and sizes that a trusting decoder turns into gigabytes or a RecursionError."""
    for opener in (b"(", b"[", b"{", b")\xff", b"\xa8", b"\xdb"):
        for count in (1, 64, 4096, 60000):
            yield "%d x %r" % (count, opener), raw(opener * count)
    yield "tuple claiming 2**31-1 items", raw(b"(\xff\xff\xff\x7f")
    yield "string claiming 2**31-1 bytes", raw(b"u\xff\xff\xff\x7f" + b"x" * 100)
    yield "list of refs to one big string", raw(b"[\xe0\x2e\x00\x00\xe1\x00\x20\x00\x00" + b"x" * 8192
                                                 + b"r\x00\x00\x00\x00" * 11999)
    yield "ref to itself", raw(b"\xdb\x01\x00\x00\x00r\x00\x00\x00\x00")
    yield "ref forward", raw(b"r\x05\x00\x00\x00")
    yield "negative length", raw(b"[\xff\xff\xff\xff")
    yield "long int", raw(marshal.dumps(2 ** 4000))
    yield "code object", raw(marshal.dumps(compile("open('/tmp/x','w')", "x", "exec")))
    yield "120 KiB of A", "A" * (120 << 10)
    yield "good state padded", None  # filled by states(): the real state plus an 80 KiB scalar


def mangled_cases(good, rng, count=60):
    data = marshal.dumps(good)
    for n in range(count):
        mangled = bytearray(data)
        if n % 3 == 0:
            mangled = mangled[:rng.randrange(len(mangled))]
        else:
            for _ in range(rng.randrange(1, 6)):
                mangled[rng.randrange(len(mangled))] = rng.randrange(256)
        yield "mangled %d" % n, raw(bytes(mangled))


def garbage_cases(rng, canary, count=30):
    alphabet = "AZaz09+/=\n\t \x1b\x7f$(){}`';\"é\u202e"
    for n in range(count):
        if n % 2:
            yield "random bytes %d" % n, raw(os.urandom(rng.randrange(1, 4096)))
        else:
            yield "random text %d" % n, "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 300)))
    yield "not base64 code", "$(touch %s)" % canary


def states(good, canary, seed=22):
    """Every hostile case, seeded: [(label, value of CUDASWITCH_STATE)]."""
    rng = random.Random(seed)
    good = dict(good, origin="project")
    cases = list(name_cases(good, canary)) + list(value_cases(good, canary)) + list(type_cases(with_modules(good)))
    cases += list(bomb_cases()) + list(mangled_cases(good, rng)) + list(garbage_cases(rng, canary))
    padded = dict(good, scalars=dict(good["scalars"], CUDA_DIR=(None, "x" * (80 << 10))))
    return [(label, value if value is not None else encode(padded)) for label, value in cases]


# ---- states that name directories: what a crafted record of "the environment before" points at

NVCC = "#!/bin/sh\necho \"nvcc $0\" >> '{marker}'\necho 'Cuda compilation tools, release 99.0, V99.0.1'\n"
LUA = 'local f = io.open("{marker}", "a"); if f then f:write("lua\\n"); f:close() end\n' \
      'prepend_path("PATH", "{root}/bin")\n'
TCL = "#%Module1.0\nputs stderr [exec sh -c {{echo tcl >> '{marker}'}}]\nprepend-path PATH {root}/bin\n"
RUNS = "#!/bin/sh\necho \"$0 $*\" >> '{marker}'\necho '{{}}'\n"


def _executable(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def _toolkit(root, marker):
    """A root that looks like a toolkit (bin/nvcc beside nvvm/, include/cuda_runtime.h) whose nvcc
    leaves a mark."""
    _executable(root / "bin" / "nvcc", NVCC.format(marker=marker))
    (root / "nvvm").mkdir(exist_ok=True)
    (root / "include").mkdir(exist_ok=True)
    (root / "include" / "cuda_runtime.h").write_text("/* planted */\n")


def plant(host, base, marker):
    """Directories only a crafted state names, each leaving a line in `marker` when anything in it
    runs: toolkit roots under the host root (also one with a space, one reached by a link, a conda
    env), a MODULEPATH dir whose cuda modulefiles (Lua and Tcl) write when evaluated, an Lmod and a
    modulecmd.tcl, a HOME whose conda envs list names a toolkit, another root prefix holding a
    toolkit. {name: the path a state names}."""
    names = {}
    for name in ("evil-home", "evil-path", "evil-module", "evil space", "evil-conda"):
        _toolkit(host.path("/opt/" + name), marker)
        names[name] = "/opt/" + name
    (host.path("/opt/evil-conda") / "conda-meta").mkdir(exist_ok=True)
    link = host.path("/opt/evil-link")
    if not os.path.lexists(link):
        os.symlink("evil-home", link)
    names["evil-link"] = "/opt/evil-link"
    modules = base / "evil-modules" / "cuda"
    modules.mkdir(parents=True, exist_ok=True)
    (modules / "99.0.lua").write_text(LUA.format(marker=marker, root=host.path("/opt/evil-module")))
    (modules / "98.0").write_text(TCL.format(marker=marker, root=host.path("/opt/evil-module")))
    for tool in ("spider", "lmod", "modulecmd.tcl", "conda", "libexec/modulecmd.tcl"):
        _executable(base / "evil-tools" / tool, RUNS.format(marker=marker))
    home = base / "evil-user"
    (home / ".conda").mkdir(parents=True, exist_ok=True)
    (home / ".conda" / "environments.txt").write_text("/opt/evil-conda\n")
    _toolkit(base / "evil-root" / "usr" / "local" / "cuda-99.0", marker)
    names.update(modules=str(base / "evil-modules"), tools=str(base / "evil-tools"), user=str(home),
                 prefix=str(base / "evil-root"))
    return names


def _spellings(path):
    """One path as a state may spell it."""
    return (path, path + "/", "/" + path, path.replace("/", "//"), path + "/.", path + "/../" + path.rpartition("/")[2],
            path.lstrip("/"), path + "\n", " " + path)


def _outer_value(rng, names, name):
    dirs = [names[k] for k in ("evil-home", "evil-path", "evil-module", "evil space", "evil-conda", "evil-link")]
    spelled = rng.choice(_spellings(rng.choice(dirs)))
    if name == "PATH":
        return ":".join([spelled + "/bin", "/usr/bin", rng.choice(dirs) + "/bin"][:rng.randrange(1, 4)])
    if name == "MODULEPATH":
        return ":".join(rng.sample([names["modules"], names["modules"] + "/", "/nonexistent", ""], rng.randrange(1, 4)))
    if name in ("LMOD_CMD", "MODULES_CMD", "CONDA_EXE"):
        return names["tools"] + "/" + {"LMOD_CMD": "lmod", "MODULES_CMD": "modulecmd.tcl"}.get(name, "conda")
    if name in ("LMOD_DIR", "MODULESHOME"):
        return names["tools"]
    return {"HOME": names["user"], "CUDASWITCH_ROOT": names["prefix"]}.get(name, spelled)


OUTER_KEYS = ("CUDASWITCH_ROOT", "HOME", "PATH", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX", "CONDA_EXE",
              "VIRTUAL_ENV", "MODULEPATH", "LMOD_CMD", "LMOD_DIR", "MODULES_CMD", "MODULESHOME")
MODULE_NAMES = ("cuda/13.1", "cuda/99.0", "cuda/98.0", "cuda", "cuda/cudaswitch", "python/3", "cuda/13.1:cuda/99.0")


def _module_record(rng, names, now):
    """A module record as away() writes one, its parts varied: which system, what it unloaded or
    loaded, the marker dir, an account restoring MODULEPATH and Lmod's table to the attacker's, the
    outer values, a seal that is absent, garbage, or copied."""
    record = {"kind": rng.choice(("lmod", "modules")), "unloaded": rng.sample(MODULE_NAMES, rng.randrange(0, 3)),
              "dir": rng.choice(("", names["modules"], "/nonexistent/modulefiles"))}
    if not record["unloaded"] or rng.random() < 0.3:
        record["loaded"] = [rng.choice(MODULE_NAMES)]
    outer = {name: _outer_value(rng, names, name) for name in rng.sample(OUTER_KEYS, rng.randrange(1, 6))}
    if rng.random() < 0.2:
        outer = {name: None for name in rng.sample(OUTER_KEYS, 3)} | outer
    record["outer"] = outer
    if rng.random() < 0.6:  # "after": the shell's values now, so `off` finds the account untouched
        evil = names["modules"]
        before = {"MODULEPATH": rng.choice((evil, evil + ":" + (now.get("MODULEPATH") or ""), "")),
                  "_ModuleTable001_": "X19tdCA9IHsgfQ==", "_LMFILES_": evil + "/cuda/99.0.lua",
                  "LOADEDMODULES": rng.choice(MODULE_NAMES)}
        record["account"] = {name: [value, now.get(name)] for name, value in before.items()}
    if rng.random() < 0.5:
        record["seal"] = rng.choice(("0" * 64, "", "f" * 63, 5))
    return record


def named_states(good, names, now, count=500, seed=11):
    """`count` seeded states that name the planted directories: [(label, value, LOADEDMODULES)];
    `now`: the shell's environment the states are tried in.
    Each rewrites the state `use` wrote with a module record, and sometimes scalars that give a
    CUDA_HOME or CUDA_PATH back; LOADEDMODULES is sometimes the marker or the module it names, so
    `off` and `use` reach the account and the module commands."""
    rng = random.Random(seed)
    cases = []
    for n in range(count):
        state = dict(good, origin=rng.choice(("shell", "project", "global")), modules=_module_record(rng, names, now))
        if rng.random() < 0.4:
            dirs = [names["evil-home"], names["evil space"], names["evil-link"]]
            given = {rng.choice(("CUDA_HOME", "CUDA_PATH")): (rng.choice(dirs), None)}
            state["scalars"] = dict(good["scalars"], **given)
        loaded = rng.choice(("", "", "cuda/cudaswitch", (state["modules"].get("loaded") or ["cuda/13.1"])[0]))
        cases.append(("named %d" % n, encode(state), loaded))
    return cases


def check_cases(cases_file, out_dir, cwd):
    """In a child: for each case, every decision (`off`, `use 13.0`, `hook-env`, `current`'s facts)
    and every renderer; failures are anything but a CudaSwitchError refusal, or a case over 2 s.
    Writes failures.json and, per shell, one file of all rendered texts for a real shell."""
    from cudaswitch.errors import CudaSwitchError
    from cudaswitch.paths import Paths
    from cudaswitch.switch import active, decide, shells

    cases = json.load(open(cases_file))
    base = dict(os.environ)
    reg = decide.load(Paths(), base)
    failures, texts = [], {"bash": [], "zsh": [], "fish": []}
    for label, value in cases:
        env = dict(base, CUDASWITCH_STATE=value)
        start = time.monotonic()
        try:
            switch = decide.use(reg, env, "13.0")
            changes = [decide.off(env), switch, decide.hook_env(lambda: reg, env, cwd)[1]]
            envstate.before_switch(env)
            active.describe(reg, env)
            decide.notes(switch)
            decide.off_notes(env)
            for diff in (change.diff for change in changes if change):
                for fmt in shells.FORMATS:
                    try:
                        text = shells.renderer(fmt)(diff)
                    except CudaSwitchError:
                        continue
                    if fmt in texts:
                        texts[fmt].append(text)
        except CudaSwitchError:
            pass
        except BaseException as exc:  # noqa: BLE001 - a traceback in the real command
            failures.append("%s: %s: %s" % (label, type(exc).__name__, str(exc)[:200]))
        if time.monotonic() - start > 2.0:
            failures.append("%s: took %.1f s" % (label, time.monotonic() - start))
    for shell, parts in texts.items():
        with open(os.path.join(out_dir, shell + ".txt"), "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write("".join(parts))
    json.dump(failures, open(os.path.join(out_dir, "failures.json"), "w"))


if __name__ == "__main__":
    check_cases(*sys.argv[1:4])

"""What a switch can be written for. SHELLS are interactive shells a user hooks: one module each
whose SHELL is a Shell (quoting, rendering a diff, hook and completion files under hooks/, the
eval hint). RENDER_ONLY formats (sh and ksh, JSON, docker's --env-file, $GITHUB_ENV) are a module
with `render(diff) -> str` and nothing else. The fast path imports this and exactly one renderer."""

import os

TYPE_CHECKING = False  # typing's own costs an import on the fast path; mypy reads this name the same
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import ModuleType
    from typing import Any

SHELLS = ("bash", "zsh", "fish")
RENDER_ONLY = ("posix", "json", "dotenv", "github")
FORMATS = SHELLS + RENDER_ONLY  # what --shell takes, in the order its help lists them
# A format rendered by a module of another name: POSIX sh takes bash's code (bash.render keeps to sh).
MODULES = {"posix": "bash", "json": "json_format"}
# The /proc comm of a parent shell -> the format it reads.
PARENT_NAMES = dict({name: name for name in SHELLS}, sh="posix", dash="posix", ksh="posix")


class Shell:
    """One interactive shell. Its module subclasses this once and names the instance SHELL; the
    class attributes below are the shell's syntax that hooks/hook.py fills into its hook file."""

    name = ""
    # The file of functions this shell's hook shares with others (hooks/), or "" for none.
    hook_functions = ""
    project_file = '"$dir/%s"'  # one candidate project file in the hook's loop, from its name
    rule_arm = "*/%s) %s ;;"  # one case arm: the file name's pattern, then the body
    rule_ends_walk = ""  # the body of the arm for a file that counts whatever it holds
    rule_needs_word = ""  # the body for a file that counts when it mentions %(word)s (or fills %(full)s bytes)

    def quote(self, value: str) -> str:
        raise NotImplementedError

    def render(self, diff: dict) -> str:
        raise NotImplementedError

    def set_global(self, var: str, value: str) -> str:
        """A line that sets the shell-global variable `var` (not exported) to `value`."""
        return "%s=%s\n" % (var, self.quote(value))

    def eval_hint(self, args: str) -> str:
        """How a user runs `cudaswitch ARGS` so that its output changes this shell."""
        return 'eval "$(cudaswitch %s)"' % args

    def hook(self, program: str | None = None) -> str:
        """This shell's hook (`init` prints it, then the completion), naming `program` as the cudaswitch to run."""
        from cudaswitch.switch.hooks import hook

        return hook.hook_text(self, program)

    def completion(self) -> str:
        """Tab completion for this shell, appended to the hook (one rc line loads both)."""
        from cudaswitch.switch.hooks import hook

        return hook.completion_text(self)


def _module(name: str, names: "Sequence[str]", what: str) -> "ModuleType":
    """The module of the shell or format `name`; a usage error for a name not among `names`."""
    if name not in names:
        from cudaswitch.errors import UsageError

        raise UsageError("unknown %s %r" % (what, name), "one of " + ", ".join(names))
    return __import__("cudaswitch.switch.shells." + MODULES.get(name, name), fromlist=["render"])


def _writer(name: str) -> "Any":
    """What renders `name`: a hooked shell's SHELL (its own render and rerun), else the format's module."""
    module = _module(name, FORMATS, "--shell")
    return getattr(module, "SHELL", module)


def renderer(name: str) -> "Callable[[dict], str]":
    """The render function of the output format `name`; a usage error for any other name."""
    return _writer(name).render


def rerunner(name: str) -> "Callable[[list, list], str] | None":
    """The format's `rerun(argv, names)`, or None: only bash's code can export what the shell holds unexported."""
    return getattr(_writer(name), "rerun", None) if name in FORMATS else None


def shell(name: str) -> Shell:
    """The Shell called `name`; a usage error for a name that is no hooked shell (`init nu`)."""
    return _module(name, SHELLS, "shell").SHELL


def listed(names: "Sequence[str]", last: str = "or") -> str:
    """Names as help text lists them: `bash, zsh or fish`."""
    return ", ".join(names[:-1]) + (" %s " % last if len(names) > 1 else "") + names[-1]


def parent_shell() -> str:
    """The shell that runs us (its /proc comm), else posix: no shellingham import for a bare `eval`."""
    try:
        with open("/proc/%d/comm" % os.getppid()) as handle:
            comm = handle.read().strip().lstrip("-")
    except OSError:
        return "posix"
    return PARENT_NAMES.get(comm, "posix")

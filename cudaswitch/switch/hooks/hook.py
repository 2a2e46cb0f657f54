"""The text `cudaswitch init SHELL` prints: the shell's hook file with the project-file rules and the
variables a switch touches filled in from projectfile's and envstate's data (so the shell's "did
anything change" test cannot disagree with hook-env), then its completion file. Completion follows
typer's protocol, runs $__cudaswitch_bin (the path `init` wrote), reads only the cached registry
(a TAB never starts discovery), and its candidates reach the shell as data, never through eval."""

import os
from typing import Protocol

from cudaswitch.switch import projectfile
from cudaswitch import envstate

HERE = os.path.dirname(os.path.abspath(__file__))
END_MARK = "# @FINGERPRINT_END@"
INDENT = "\n                "  # the depth of the case arms in every hook file


class HookSyntax(Protocol):
    """What the fills need of a shell (a switch.shells.Shell has it all)."""

    name: str
    hook_functions: str
    project_file: str
    rule_arm: str
    rule_ends_walk: str
    rule_needs_word: str

    def set_global(self, var: str, value: str) -> str: ...


def hook_text(shell: HookSyntax, program: str | None = None) -> str:
    """The hook for `shell`, naming `program` (an absolute path) as the cudaswitch to run if given."""
    text = _read("cudaswitch." + shell.name)
    for name, value in _fills(shell).items():
        text = text.replace("@%s@" % name, value)
    if program:
        text = shell.set_global("__cudaswitch_bin", program) + text
    return text


def completion_text(shell: HookSyntax) -> str:
    """The shell's completion script (hooks/cudaswitch.complete.NAME), as it is."""
    return _read("cudaswitch.complete." + shell.name)


def _read(file_name: str) -> str:
    with open(os.path.join(HERE, file_name), encoding="utf-8") as handle:
        return handle.read()


def _fills(shell: HookSyntax) -> "dict[str, str]":
    names = [rule[0] for rule in projectfile.HOOK_RULES]
    variables = sorted(set(envstate.SCALARS) | set(envstate.LISTS) | {envstate.STATE_VAR})
    functions, end = _shared(shell)
    return {"WRAPPER": functions, "FINGERPRINT_END": end,
            "FILES": " ".join(shell.project_file % name for name in names), "RULES": _rules(shell),
            "READ_BYTES": str(projectfile.MAX_BYTES + 1), "VARIABLES": " ".join(variables)}


def _shared(shell: HookSyntax) -> "tuple[str, str]":
    """(the functions the shell's hook shares with others, how its fingerprint function ends), from
    the one text they share; ("", "") for a shell whose hook holds all of its own."""
    if not shell.hook_functions:
        return "", ""
    text = _read(shell.hook_functions).replace("@SHELL@", shell.name)
    functions, _, end = text.split("\n", 1)[1].partition(END_MARK)
    return functions.rstrip("\n"), end.split("\n", 1)[1].rstrip("\n")


def _rules(shell: HookSyntax) -> str:
    """One case arm per project file: which word makes it count, and whether it ends the walk.
    A file that fills the whole read (too long to judge from its start) counts: hook-env decides."""
    full = str(projectfile.MAX_BYTES + 1)
    arms = []
    for name, word, final in projectfile.HOOK_RULES:
        body = shell.rule_ends_walk if final else shell.rule_needs_word % {"word": word, "full": full}
        arms.append(shell.rule_arm % (name, body))
    return INDENT.join(arms)

"""One registry of shells (switch/shells) feeds every place that names one: `init`'s choices,
`--shell`'s formats, their help pages and completion, the hook, and the hints. What a maintainer
adding a shell relies on: every registered shell renders a switch its own shell evaluates, has a
hook and a completion its shell parses, and hints a user can paste into that shell; the choices a
user sees are exactly the registry's; a shell cudaswitch does not have (`init nu`) is a usage line.
And adding one is one module plus its hook and completion text (the last test does it)."""

import re
import subprocess
import sys
import types

import pytest

from cudaswitch.cli import table
from cudaswitch.cli.main import main
from cudaswitch.errors import UsageError
from cudaswitch.switch import shells
from cudaswitch.switch.hooks import hook
from cudaswitch.switch.shells import hints
from tests import kits
from tests.conftest import Host
from tests.shellrun import script, shell_path

SYNTAX_CHECK = {"bash": ["-n"], "zsh": ["-n"], "fish": ["--no-execute"]}
SOURCE = {"bash": ". %s", "zsh": ". %s", "fish": "source %s"}
# Prints the exported value of each name as a child sees it, byte for byte (repr; None = unset).
SHOW = "python3 -c 'import os, sys; print(repr([os.environ.get(n) for n in sys.argv[1:]]))' "
HOSTILE = "/opt/it's $(touch pwned) `id` \\n\"q\"\nnext line é"


@pytest.fixture(scope="module")
def toolkit_host(tmp_path_factory):
    """A host with one 13.1 toolkit, its registry cached, and a project pinned to it."""
    base = tmp_path_factory.mktemp("shells")
    (base / "root").mkdir()
    host = Host(base / "root", base / "work")
    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    host.run("list", check=True)
    (base / "project").mkdir()
    (base / "project" / ".cudaversion").write_text("13.1\n")
    return host, base / "project"


def test_the_kinds_are_apart_and_every_format_renders():
    """Shells have hooks; formats for readers that are not shells render and have no hook, so
    `init json` is refused as a shell cudaswitch does not hook."""
    assert set(shells.SHELLS).isdisjoint(shells.RENDER_ONLY)
    assert shells.FORMATS == shells.SHELLS + shells.RENDER_ONLY
    for name in shells.FORMATS:
        assert shells.renderer(name)({"set": {"CUDA_HOME": "/opt/cuda"}, "unset": []}).endswith("\n")
    for name in shells.RENDER_ONLY:
        with pytest.raises(UsageError, match="unknown shell"):
            shells.shell(name)


@pytest.mark.parametrize("name", shells.SHELLS)
def test_each_shell_evaluates_its_own_rendering_byte_exact(name, tmp_path):
    """`use`'s output for this shell, evaluated by the real shell: a hostile path (quotes, $(...),
    backticks, a newline, non-ASCII) arrives exactly and runs nothing; an unset name is gone."""
    diff = {"set": {"CUDA_HOME": HOSTILE, "LIBRARY_PATH": "/x y:/z"}, "unset": ["CUDA_PATH"]}
    code = tmp_path / "switch.code"
    code.write_text(shells.shell(name).render(diff))
    env = {"PATH": "/usr/bin:/bin", "CUDA_PATH": "/old", "HOME": str(tmp_path)}
    proc = script(name, [SOURCE[name] % code, SHOW + "CUDA_HOME LIBRARY_PATH CUDA_PATH"], env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == repr([HOSTILE, "/x y:/z", None])
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("name", shells.SHELLS)
def test_each_shell_parses_its_hook_and_completion(name, tmp_path):
    """What `init NAME` prints (the hook, then the completion) is valid code for that shell, and
    the completion asks the program through typer's protocol."""
    shell = shells.shell(name)
    completion = shell.completion()
    assert "_CUDASWITCH_COMPLETE=complete_" in completion
    path = tmp_path / ("init." + name)
    path.write_text(shell.hook("/opt/cudaswitch's bin/cudaswitch") + completion)
    check = subprocess.run([shell_path(name)] + SYNTAX_CHECK[name] + [str(path)], capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0, check.stderr


@pytest.mark.parametrize("name", shells.SHELLS)
def test_each_shells_hints_work_when_pasted_into_it(toolkit_host, name):
    """Without the hook: `current` in a pinned project says how to load the hook in this very
    shell; pasting that line loads it (the program then knows the hook is there), and the eval
    hint `use` gives switches the shell."""
    host, project = toolkit_host
    shell = shells.shell(name)
    # Not the script's last command: a shell may exec that in its own place, and then no shell is
    # the program's parent to be read.
    proc = script(name, ["cudaswitch current", "true"], host.env, cwd=project)
    init = shell.eval_hint("init " + name)
    assert "the hook is not loaded (`%s`)" % init in proc.stdout, proc.stdout + proc.stderr
    loaded = script(name, [init, "cudaswitch current"], host.env, cwd=project)
    assert "not applied yet: the hook applies it at the next prompt" in loaded.stdout, loaded.stderr
    switched = script(name, [shell.eval_hint("use 13.1 --no-verify"), SHOW + "CUDA_HOME"], host.env)
    assert switched.stdout.strip() == repr([str(host.path("/usr/local/cuda-13.1"))]), switched.stderr


def _listed_names(page, start, end):
    """The names a help page lists between `start` and `end` (wrapping and 'or' removed)."""
    text = " ".join(page.split())
    segment = text[text.index(start) + len(start):text.index(end, text.index(start))]
    return [word for word in re.findall(r"[a-z]+", segment) if word != "or"]


def _program_offers(host, line):
    words = line.split()
    env = {"_CUDASWITCH_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(len(words))}
    proc = host.run(env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [word for word in proc.stdout.split("\n") if word]


@pytest.mark.parametrize("fast", [True, False])
def test_init_and_shell_choices_are_the_registrys_in_help_and_completion(host, fast):
    """What a user sees as the choices, on both paths (the fast help and typer's): init's help and
    TAB list the registry's shells and direnv, --shell's help and TAB its formats, nothing else."""
    env = {} if fast else {"CUDASWITCH_NO_FAST": "1"}
    init_names = list(shells.SHELLS) + ["direnv"]
    assert list(table.find(["init"])[0].args[0].choices) == init_names
    init_page = host.run("init", "--help", env=env, check=True).stdout
    assert _listed_names(init_page, "Arguments: SHELL ", "(the") == init_names
    for command in ("use", "off", "hook-env"):
        page = host.run(command, "--help", env=env, check=True).stdout
        assert _listed_names(page, "Output format:", "(default") == list(shells.FORMATS), command
    assert _program_offers(host, "cudaswitch init ") == init_names
    assert _program_offers(host, "cudaswitch use 13.1 --shell ") == list(shells.FORMATS)


@pytest.mark.parametrize("argv", [["init", "nu"], ["use", "13.1", "--shell", "nu"], ["off", "--shell=nu"]])
@pytest.mark.parametrize("fast", [True, False])
def test_a_shell_cudaswitch_does_not_have_is_one_usage_line(host, argv, fast):
    """`cudaswitch init nu` (a shell nobody registered): exit 2, one line naming it, nothing on
    stdout, no traceback, on both paths."""
    proc = host.run(*argv, env={} if fast else {"CUDASWITCH_NO_FAST": "1"})
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "'nu'" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "KeyError" not in proc.stderr


class Nu(shells.Shell):
    """A shell as a maintainer would add it (the docs' steps): nushell's syntax, its own quoting."""

    name = "nu"
    hook_functions = ""
    project_file = "$'($dir)/%s'"
    rule_arm = "'*/%s' => { %s }"
    rule_ends_walk = "return $fp"
    rule_needs_word = "if not ($content | str contains '%(word)s') { continue } # %(full)s"

    def quote(self, value: str) -> str:
        return "r#'" + value + "'#"

    def render(self, diff: dict) -> str:
        return "".join("$env.%s = %s\n" % (var, self.quote(value)) for var, value in diff["set"].items())

    def set_global(self, var: str, value: str) -> str:
        return "$env.%s = %s\n" % (var, self.quote(value))

    def eval_hint(self, args: str) -> str:
        return "cudaswitch %s | save -f cudaswitch.nu; source cudaswitch.nu" % args


def test_adding_a_shell_is_one_module_and_its_texts(monkeypatch, tmp_path, capsys):
    """Adding nushell takes a module with SHELL, its hook file and its completion file, and its
    name in the registry; the command table's choices and help, `--shell`, the hook, completion
    and the hints follow from them with no other file changed."""
    module = types.ModuleType("cudaswitch.switch.shells.nu")
    module.SHELL = Nu()  # as docs/architecture.md says: the module gives SHELL, whose render is a method
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(shells, "nu", module, raising=False)
    monkeypatch.setattr(shells, "SHELLS", shells.SHELLS + ("nu",))
    monkeypatch.setattr(shells, "FORMATS", shells.SHELLS + shells.RENDER_ONLY)
    for var in ("CUDASWITCH_CACHE_DIR", "CUDASWITCH_CONFIG_DIR", "CUDASWITCH_DATA_DIR"):
        monkeypatch.setenv(var, str(tmp_path / var))
    (tmp_path / "cudaswitch.nu").write_text("# nu hook\nlet files = [@FILES@]\nmatch $f {\n    @RULES@\n}\n")
    (tmp_path / "cudaswitch.complete.nu").write_text("# nu completion\n")
    monkeypatch.setattr(hook, "HERE", str(tmp_path))

    assert "nu" in table.find(["init"])[0].args[0].choices and "nu" in table.SHELL.help
    assert main(["init", "nu"]) == 0
    out = capsys.readouterr().out
    assert "'*/.cudaversion' => { return $fp }" in out and out.endswith("# nu completion\n")
    switch = {"set": {"CUDA_HOME": "/opt/x"}, "unset": []}
    assert shells.renderer("nu")(switch) == "$env.CUDA_HOME = r#'/opt/x'#\n" and shells.rerunner("nu") is None
    assert "nu" in shells.listed(shells.FORMATS)
    monkeypatch.setattr(shells, "parent_shell", lambda: "nu")
    assert hints.switch_command({}, "off") == "cudaswitch off | save -f cudaswitch.nu; source cudaswitch.nu"
    assert "cudaswitch init nu | save" in hints.not_applied_note({})
    assert hints.hook_shell({hints.HOOK_VAR: "nu"}) == "nu"

"""The one command table: each command's name, arguments, options (with help), handler and whether
it runs without typer; the fast parser and the typer app are both generated from it. Import-light:
the fast path reads it on every `use`, so handlers are "module:function" strings imported when run,
and the shell registry's names are read only when a command asks for them."""

from cudaswitch.settings import TORCH_TIMEOUT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from types import ModuleType
    from typing import Any

# Where help pages send a reader: the installed tool itself (a pipx user has no repository checkout).
DOCS = "More: `cudaswitch COMMAND --help` for each command; the README for the whole guide."
COMMAND_DOCS = "More: `cudaswitch --help` lists every command; the README has the whole guide."


def _shells() -> "ModuleType":
    from cudaswitch.switch import shells

    return shells


def _called(value: "Any") -> "Any":
    """Help texts and init's choices may be functions, called when read, so the commands that take
    no shell never import the shell registry."""
    return value() if callable(value) else value


class _Part:
    __slots__ = ()
    _help: "Any"

    @property
    def help(self) -> "str | None":
        return _called(self._help)


class Opt(_Part):
    """One option. kind: flag (bool; the default), tristate (--x/--no-x, None when absent), str (the
    default with a metavar), float; many=True collects every occurrence (and comma lists stay the
    handler's business). dest: the handler's keyword, by default the first name's (--dry-run: dry_run)."""

    __slots__ = ("names", "dest", "kind", "_help", "metavar", "many", "complete")

    def __init__(self, names: str, help: "Any", metavar: "str | None" = None, kind: "str | None" = None,
                 many: bool = False, complete: "str | None" = None, dest: "str | None" = None) -> None:
        self.names, self._help, self.metavar = tuple(names.split()), help, metavar
        self.many, self.complete = many, complete
        self.kind = kind or ("str" if metavar else "flag")
        self.dest = dest or self.names[0].lstrip("-").replace("-", "_")

    def default(self) -> "list | bool | None":
        return [] if self.many else (False if self.kind == "flag" else None)


class Arg(_Part):
    """One positional. nargs: 1 (required), "?" (optional), "*" (any number), "rest" (a command
    line: everything from the first positional after the others, options included). complete: what
    TAB offers (a function of cli/complete.py); REQUESTs offer the cached toolkits' requests."""

    __slots__ = ("name", "_help", "nargs", "_choices", "complete")

    def __init__(self, name: str, help: "Any", nargs: "int | str" = 1, choices: "Any" = None,
                 complete: "str | None" = None) -> None:
        self.name, self._help, self.nargs, self._choices = name, help, nargs, choices
        self.complete = complete or ("requests" if name == "REQUEST" else None)

    @property
    def choices(self) -> "tuple[str, ...] | None":
        return _called(self._choices)

    @property
    def dest(self) -> str:
        return self.name.lower()


class Command:
    __slots__ = ("path", "handler", "help", "args", "options", "fast", "examples", "hidden")

    def __init__(self, path: str, handler: str, help: str, args: "Iterable[Arg]" = (), options: "Iterable[Opt]" = (),
                 fast: bool = False, examples: "Iterable[str]" = (), hidden: bool = False) -> None:
        self.path, self.handler, self.help = tuple(path.split()), handler, help
        self.args, self.options = tuple(args), tuple(options) + (VERBOSE,)
        self.fast, self.examples, self.hidden = fast, tuple(examples), hidden

    @property
    def name(self) -> str:
        return " ".join(self.path)

    def option(self, word: str) -> "Opt | None":
        return next((opt for opt in self.options if word in opt.names), None)


# Accepted before the command and among any command's own options, on both paths.
VERBOSE = Opt("--verbose -v", "Show the full traceback on errors.")
JSON = Opt("--json", "Print the result as JSON on stdout.", dest="as_json")
SHELL = Opt("--shell", lambda: "Output format: %s (default: the parent shell)." % _shells().listed(_shells().FORMATS),
            metavar="SHELL")
PYTHON = Opt("--python", "The Python whose torch to check (default: the first python3 on the switched PATH).",
             metavar="PY")
TIMEOUT = Opt("--timeout", "Seconds the Python probe may take (default: config torch_timeout, else %g)."
              % TORCH_TIMEOUT, metavar="SECONDS", kind="float")
WIDE = Opt("--wide", "Every value whole: no shortened roots, whatever the width.")
REQUEST = Arg("REQUEST", "Toolkit: 12.4, 12, 12.4.131, '>=12.1,<13', latest, system, SOURCE:REQUEST or a root path.")
IMAGE = Opt("--image", "Audit a container image instead of this host: oci:DIR[:TAG], oci-archive:FILE[:TAG] or "
            "docker-archive:FILE[:NAME]. Exit 1 when it cannot start here.", metavar="REF")
KEY = Arg("KEY", "A setting's name, as `config show` lists it (default, verdict, torch_timeout, ...).")
OPTIONAL_REQUEST = Arg("REQUEST", "Toolkit (default: the active one, else the default).", nargs="?")

COMMANDS = (
    Command("list", "cudaswitch.commands.registry_cmds:list_", fast=True,
            help="Every toolkit found: version, status, whether this driver runs it, sources, root; which is active "
                 "and which the default.",
            options=(JSON, Opt("--refresh", "Search every source again instead of using the cache."),
                     Opt("--runnable", "Only the toolkits this host's driver runs (an error when no driver is "
                         "readable: it cannot tell)."), WIDE),
            examples=("cudaswitch list", "cudaswitch list --runnable", "cudaswitch list --json --refresh")),
    Command("which", "cudaswitch.commands.registry_cmds:which", fast=True,
            help="Path of a toolkit's root, or of a tool in it (nvcc, ptxas, ...).",
            args=(OPTIONAL_REQUEST, Arg("TOOL", "A tool or library in the toolkit, e.g. nvcc.", nargs="?")),
            examples=("cudaswitch which 12.4", "cudaswitch which 13 nvcc")),
    Command("use", "cudaswitch.commands.switch_cmds:use", fast=True,
            help="Print the shell code that switches this shell to REQUEST; the verdict goes to stderr.",
            args=(REQUEST,),
            options=(SHELL, Opt("--no-verify", "Skip the verdict (nvcc, driver, torch)."),
                     Opt("--strict", "Refuse the switch when the verdict is an error.")),
            examples=('eval "$(cudaswitch use 12.4)"', "cudaswitch use conda:12.1 --shell fish | source",
                      "cudaswitch use 13.1 --shell github >> \"$GITHUB_ENV\"")),
    Command("off", "cudaswitch.commands.switch_cmds:off", fast=True,
            help="Print the code that restores the environment from before cudaswitch switched it.",
            options=(SHELL,), examples=('eval "$(cudaswitch off)"',)),
    Command("exec", "cudaswitch.commands.switch_cmds:exec_", fast=True,
            help="Run CMD with the toolkit (the process is replaced; its exit status is yours).",
            args=(REQUEST, Arg("CMD", "The command line to run, after an optional --.", nargs="rest",
                               complete="tools")),
            examples=("cudaswitch exec 13.0 -- cmake ..", "cudaswitch exec 12.4 nvcc --version")),
    Command("current", "cudaswitch.commands.switch_cmds:current", fast=True,
            help="The toolkit this shell uses and why: shell, project file, global default or system.",
            options=(JSON,), examples=("cudaswitch current", "cudaswitch current --json")),
    Command("hook-env", "cudaswitch.commands.switch_cmds:hook_env", fast=True, hidden=True,
            help="Called by the shell hook when the project file changed; prints code or nothing.",
            options=(SHELL,), examples=("cudaswitch hook-env --shell bash",)),
    Command("init", "cudaswitch.commands.switch_cmds:init", fast=True,
            help="Print the hook to load from the shell's rc file.",
            args=(Arg("SHELL", lambda: ", ".join(_shells().SHELLS) + ", or direnv (the `use cuda` function for "
                      "direnvrc).", choices=lambda: _shells().SHELLS + ("direnv",)),),
            examples=('eval "$(cudaswitch init bash)"   # in ~/.bashrc', "cudaswitch init fish | source",
                      "cudaswitch init direnv >> ~/.config/direnv/direnvrc")),
    Command("direnv-use", "cudaswitch.commands.integration_cmds:direnv_use", fast=True, hidden=True,
            help="What `use cuda REQUEST` in an .envrc runs (see `cudaswitch init direnv`); prints bash code.",
            args=(Arg("WORDS", "-- REQUEST, as `use cuda REQUEST` passes it.", nargs="rest"),),
            examples=("use cuda 13.0   # in an .envrc",)),
    Command("local", "cudaswitch.commands.registry_cmds:local", fast=True,
            help="Write (or with --unset remove) .cudaversion in the current directory; without either, print the "
                 "project's version and (on stderr) the file it comes from.",
            args=(Arg("REQUEST", "A version request a project file may hold, e.g. 12.4.", nargs="?"),),
            options=(Opt("--unset", "Remove .cudaversion from this directory."),),
            examples=("cudaswitch local 12.4", "cudaswitch local", "cudaswitch local --unset")),
    Command("global", "cudaswitch.commands.registry_cmds:global_", fast=True,
            help="Set (or with --unset remove) the default toolkit in config.toml; without either, print it.",
            args=(Arg("REQUEST", "A version request, e.g. 12.4 (not a path).", nargs="?"),),
            options=(Opt("--unset", "Remove the default from config.toml."),),
            examples=("cudaswitch global 12.4", "cudaswitch global", "cudaswitch global --unset")),
    Command("config path", "cudaswitch.commands.registry_cmds:config_path", fast=True,
            help="Where config.toml lives.", examples=("cudaswitch config path",)),
    Command("config show", "cudaswitch.commands.registry_cmds:config_show", fast=True,
            help="The settings in effect: config.toml's own keys over the defaults.",
            options=(JSON,), examples=("cudaswitch config show", "cudaswitch config show --json")),
    Command("config get", "cudaswitch.commands.registry_cmds:config_get", fast=True,
            help="Print one setting's value in effect (a list comma-separated); stderr says where it comes from. "
                 "Exit 1 when it is not set.", args=(KEY,),
            examples=("cudaswitch config get verdict",)),
    Command("config set", "cudaswitch.commands.registry_cmds:config_set", fast=True,
            help="Write one setting to config.toml (atomically), checked as the file is: a list comma-separated, "
                 "a flag true/false. A bad key or value is exit 2.",
            args=(KEY, Arg("VALUE", "The value, e.g. problems, 30, true, conda,system.")),
            examples=("cudaswitch config set verdict problems", "cudaswitch config set source_order managed,system")),
    Command("config unset", "cudaswitch.commands.registry_cmds:config_unset", fast=True,
            help="Remove one setting from config.toml, so its default applies.", args=(KEY,),
            examples=("cudaswitch config unset torch_timeout",)),
    Command("system", "cudaswitch.commands.switch_cmds:system",
            help="Repoint /usr/local/cuda at REQUEST (through update-alternatives where it manages the link).",
            args=(REQUEST,),
            options=(Opt("--dry-run", "Say what would change and change nothing."),),
            examples=("sudo cudaswitch system 13.1", "cudaswitch system 12.4 --dry-run")),
    Command("verify", "cudaswitch.commands.verify_cmds:verify",
            help="Verify a toolkit against nvcc, the host gcc, the driver and your torch. Exit 1 on an error check.",
            args=(Arg("REQUEST", "Toolkit to verify (default: the active one).", nargs="?"),),
            options=(PYTHON, Opt("--compile", "Build (and with a GPU run) a one-kernel program.", dest="compile_"),
                     TIMEOUT, JSON),
            examples=("cudaswitch verify 12.4", "cudaswitch verify --compile --python ~/venv/bin/python")),
    Command("doctor", "cudaswitch.commands.verify_cmds:doctor",
            help="Layered diagnosis of this host: hardware, driver, toolkit, framework, project deps, environment.",
            options=(JSON, PYTHON, TIMEOUT, Opt("--collective", "Also run one all_reduce in two processes of your "
                                                "torch on loopback (NCCL on 2+ GPUs, else gloo) within --timeout; on "
                                                "failure print the layer that failed.")),
            examples=("cudaswitch doctor", "cudaswitch doctor --json", "cudaswitch doctor --collective")),
    Command("explain", "cudaswitch.commands.verify_cmds:explain",
            help="The known cause of a CUDA / PyTorch error message, checked on this host. Exit 1 if unknown.",
            args=(Arg("TEXT", "The error message (quote it); '-' or none: read it from stdin (its last MiB).",
                      nargs="?"),), options=(JSON, PYTHON, TIMEOUT),
            examples=("cudaswitch explain \"CUDA error: no kernel image is available for execution on the device\"",
                      "python train.py 2>&1 | cudaswitch explain")),
    Command("audit", "cudaswitch.commands.audit_cmds:audit",
            help="Which toolkits this host (or an image) has, which work, and which the driver supports.",
            options=(JSON, Opt("--compact", "JSON on one line (JSON lines from many nodes)."),
                     Opt("--root", "Audit an unpacked image or a mounted node root.", metavar="DIR"),
                     Opt("--compile", "Compile a one-kernel program with each toolkit.", dest="compile_"),
                     Opt("--exec", "With --root: allow running binaries found there.", dest="allow_exec"),
                     Opt("--progress", "Progress on stderr (default: when stderr is a terminal; --no-progress: never).",
                         kind="tristate"),
                     WIDE, IMAGE,
                     Opt("--driver", "With --image: judge it for this driver, its release (550.54.15) or the CUDA "
                         "version it supports (12.4), instead of this host's.", metavar="VERSION"),
                     Opt("--gpu", "With --image: judge it for a GPU by compute capability (sm_90, 8.6) instead of "
                         "this host's; repeat for several.", metavar="ARCH", many=True),
                     Opt("--expect", "Check this node against a site policy (toolkits, driver, gpus, nccl): prints "
                         "`policy met: ...`, or exits 1 printing the first unmet requirement on one line (a drain "
                         "reason); --json gives every requirement's check.", metavar="POLICY.toml"),
                     Opt("--html", "Also write the report as the self-contained HTML page `audit merge --html` makes, "
                         "of this one host.", metavar="FILE")),
            examples=("cudaswitch audit", "cudaswitch audit --json --compile", "cudaswitch audit --html host.html",
                      "cudaswitch audit --expect /etc/cudaswitch/policy.toml",
                      "cudaswitch audit --root /srv/images/rocky9",
                      "cudaswitch audit --image oci:/srv/oci/pytorch:24.05 --driver 535.183.01",
                      "cudaswitch audit --image docker-archive:torch.tar --gpu sm_80")),
    Command("audit merge", "cudaswitch.commands.audit_cmds:merge", fast=True,
            help="Merge many hosts' reports into one matrix of toolkit versions x hosts, and the skew between them. "
                 "A report that cannot be read is named on stderr and the rest merge; exit 0 when one merged "
                 "(--strict: 1 when anything is refused, missing or against a rule), 1 when none did.",
            args=(Arg("FILE", "Reports from `audit --json`, or directories of them (every *.json in it); none "
                           "or '-': JSON lines on stdin.", nargs="*"),),
            options=(Opt("--json", "The matrix and the skew report as JSON (one line above 1,000 hosts).",
                         dest="as_json"),
                     Opt("--strict", "Exit 1 when any report is refused or missing, or a --require/--same rule is "
                         "broken."),
                     Opt("--nodes", "The nodes that should have reported (node[01-64]); the others are named missing.",
                         metavar="HOSTLIST"),
                     Opt("--require", "Every node must have it: cuda, cudnn, nccl, cupti or driver (cuda=12.4). "
                         "Repeatable.", metavar="KEY=VERSION", many=True),
                     Opt("--same", "Every node must agree on it: driver, branch, gpus, toolkits, cudnn, nccl or "
                         "cupti. Repeatable.", metavar="KEY", many=True),
                     Opt("--html", "Also write the report as one self-contained HTML page.", metavar="FILE"),
                     WIDE, Opt("--image", "Also say which nodes can start this image and why the others cannot "
                               "(--strict: exit 1 when any cannot).", metavar="REF")),
            examples=("pdsh -N -w 'node[01-64]' cudaswitch audit --json --compact | cudaswitch audit merge",
                      "cudaswitch audit merge audit/*.json --strict --require cuda=12.4 --same driver",
                      "cudaswitch audit merge audit/*.json --nodes 'node[01-64]' --html report.html",
                      "cudaswitch audit merge audit/*.json --image oci-archive:train.tar")),
    Command("install", "cudaswitch.commands.install_cmds:install",
            help="Install a CUDA toolkit, nvcc included, into cudaswitch's data dir (no root), from NVIDIA's "
                 "redistributable archives, a site mirror of them, or NVIDIA's wheels.",
            args=(Arg("REQUEST", "CUDA release: 13.1, 12.4.1, 13, '>=12.1,<13' or latest (not with --list).",
                      nargs="?", complete="releases"),),
            options=(Opt("--components -c", "More components, comma-separated or repeated: redist names (cublas, "
                         "nvrtc, cuda_cupti) or, with --from pypi, extras of NVIDIA's cuda-toolkit package (default "
                         "nvcc,cudart,cccl).", metavar="LIST", many=True),
                     Opt("--from", "Where from: redist (NVIDIA's archives or --mirror) or pypi (NVIDIA's wheels "
                         "through pip). Default: redist, except 13+ without a mirror, which the wheels serve.",
                         metavar="SOURCE", dest="source"),
                     Opt("--mirror", "Base URL of a mirror of NVIDIA's redist archives (http(s)://, file://DIR); "
                         "default: config redist_url, else NVIDIA's.", metavar="URL"),
                     Opt("--with", "Libraries from their own redist beside the toolkit: cudnn (the build for its CUDA "
                         "major).", metavar="LIB", many=True, dest="extras"),
                     Opt("--prefix", "Install into this new directory (e.g. /opt/cuda/12.4, shared by a site) instead "
                         "of cudaswitch's data dir.", metavar="DIR"),
                     Opt("--modulefile", "Write an Lmod (Lua) and an Environment Modules (Tcl) modulefile, "
                         "DIR/cuda/<x.y>.lua and DIR/cuda/<x.y>, for the installed toolkit.", metavar="DIR"),
                     Opt("--list", "List the releases the source offers instead, with nvcc's version and whether this "
                         "host's driver runs them.", dest="list_releases"),
                     Opt("--pre", "With --from pypi: also take pre-releases (release candidates) of NVIDIA's wheels, "
                         "labelled as such; an exact one (13.4.0rc1) needs no --pre."),
                     JSON),
            examples=("cudaswitch install 12.4", "cudaswitch install 13.1 --with cudnn",
                      "cudaswitch install 12.4 --mirror file:///srv/mirror --prefix /opt/cuda/12.4 "
                      "--modulefile /opt/modulefiles",
                      "cudaswitch install --list --json")),
    Command("uninstall", "cudaswitch.commands.install_cmds:uninstall",
            help="Remove a toolkit that `cudaswitch install` made (never any other).",
            args=(Arg("REQUEST", "A managed toolkit: 13.0, 13.0.3, managed:12.4 or its path; one that matches "
                      "several removes none and lists them.", complete="managed"),),
            options=(Opt("--force", "Remove it even if it is active in this shell."),),
            examples=("cudaswitch uninstall 13.0",)),
    Command("torch", "cudaswitch.commands.integration_cmds:torch", fast=True,
            help="Which PyTorch CUDA builds run here (driver, every GPU's arch, the toolkit), newest first, and "
                 "the pip / uv / conda line for the one to install. Exit 1 when the facts are known and none fits.",
            args=(Arg("REQUEST", "Toolkit for building extensions (default: the active one).", nargs="?"),),
            options=(Opt("--driver", "Plan for a driver: its release (550.54.14) or the CUDA version it supports "
                         "(12.4).", metavar="VERSION"),
                     Opt("--gpu", "Plan for a GPU by compute capability (sm_61, 8.6); repeat for several.",
                         metavar="ARCH", many=True, complete="arches"),
                     Opt("--node", "Plan for the driver and GPUs of a compute node's `audit --json` report (--driver "
                         "/ --gpu still win; CUDASWITCH_DRIVER and CUDASWITCH_GPUS apply without either).",
                         metavar="REPORT.json"),
                     Opt("--python", "The Python whose installed torch to read.", metavar="PY"),
                     JSON),
            examples=("cudaswitch torch", "cudaswitch torch --driver 550.54 --gpu sm_61 --json",
                      "cudaswitch torch --node gpu01.json")),
    Command("facts", "cudaswitch.commands.install_cmds:facts",
            help="What cudaswitch knows and how old it is: the newest CUDA release, driver branch, GPU architecture "
                 "and torch release in its tables, each with its source and date, and what `facts refresh` added.",
            options=(JSON,), examples=("cudaswitch facts", "cudaswitch facts --json")),
    Command("facts refresh", "cudaswitch.commands.install_cmds:facts_refresh",
            help="Read the redist index `install` reads for CUDA releases newer than the shipped driver table and "
                 "the driver bundled with each; cached and printed apart, marked with the day read (a shipped fact is "
                 "never replaced). Unreachable: one line, then the facts cudaswitch has.",
            options=(Opt("--mirror", "Base URL of a mirror of NVIDIA's redist index (default: config redist_url, else "
                         "NVIDIA's).", metavar="URL"), JSON),
            examples=("cudaswitch facts refresh",
                      "cudaswitch facts refresh --mirror file:///srv/mirror/compute/cuda/redist")),
    Command("kernel install", "cudaswitch.commands.integration_cmds:kernel_install",
            help="Write a Jupyter kernelspec whose env is the switched environment of REQUEST.",
            args=(Arg("REQUEST", "Toolkit the kernel runs with, e.g. 13.0."),),
            options=(Opt("--python", "Python with ipykernel (default: python3 on the switched PATH).", metavar="PY"),
                     Opt("--name", "Kernel name (default: cuda-X.Y).", metavar="NAME")),
            examples=("cudaswitch kernel install 13.0", "cudaswitch kernel install 12.4 --python ~/venv/bin/python")),
    Command("kernel list", "cudaswitch.commands.integration_cmds:kernel_list",
            help="The Jupyter kernels cudaswitch installed.", options=(JSON,),
            examples=("cudaswitch kernel list",)),
    Command("kernel remove", "cudaswitch.commands.integration_cmds:kernel_remove",
            help="Remove a kernel cudaswitch installed (others are left alone).",
            args=(Arg("NAME", "The kernel's name (see `kernel list`)."),),
            examples=("cudaswitch kernel remove cuda-13.0",)),
)

# audit and facts are commands with subcommands
GROUPS = {"config": "The config file.", "audit": None, "facts": None,
          "kernel": "Jupyter kernels that run with a toolkit switched in."}


def find(words: "list[str]") -> "tuple[Command, list[str]] | None":
    """(command, the rest of argv) for the longest command path that argv starts with, else None."""
    best = max((c for c in COMMANDS if tuple(words[:len(c.path)]) == c.path), key=lambda c: len(c.path), default=None)
    return (best, list(words[len(best.path):])) if best else None

"""direnv: `use cuda 13.0` in an .envrc. direnv restores the environment on leaving the directory,
so cudaswitch only switches. The argument gets a .cudaversion's rules plus a toolkit root path:
an .envrc is code its user ran `direnv allow` on, while a .cudaversion is data any repository may
ship, where a path could point a switch anywhere. Import-light: this runs in every direnv load.
"""

from cudaswitch.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cudaswitch.paths import Paths
    from cudaswitch.switch.plan import SwitchPlan

ENVRC = ".envrc (`use cuda`)"

DIRENVRC = """\
# cudaswitch for direnv. Put this in ~/.config/direnv/direnvrc, then write `use cuda 13.0` (or a
# toolkit root: `use cuda /opt/cuda-12.4`) in a project's .envrc. direnv restores the environment
# when you leave the directory.
use_cuda() {
    local __cudaswitch_code
    __cudaswitch_code=$(%(program)s direnv-use -- "$@") || return $?
    eval "$__cudaswitch_code"
}
"""


def direnvrc(program_quoted: str) -> str:
    """The `use_cuda` function, calling cudaswitch by the (already quoted) program path."""
    return DIRENVRC % {"program": program_quoted}


def request_of(args: list) -> str:
    """The one request after `--`: a toolkit root path, or checked as a project file's request."""
    from cudaswitch.switch import projectfile

    rest = args[1:] if args[:1] == ["--"] else args
    if len(rest) != 1:
        raise UsageError("`use cuda` takes one version request or toolkit root, e.g. `use cuda 13.0`, got %d "
                         "arguments" % len(rest))
    if not _is_path(rest[0]):
        projectfile.parse_request(ENVRC, rest[0])
    return rest[0]


def _is_path(text: str) -> bool:
    """A path as the command line takes one (the .envrc's directory is the working directory)."""
    from cudaswitch.errors import BadRequest
    from cudaswitch.request import ToolkitRequest

    try:
        return ToolkitRequest.parse(text, allow_path=True).kind == "path"
    except BadRequest:
        return False


def switch_for_envrc(paths: "Paths", env: dict, args: list) -> "SwitchPlan":
    """The SwitchPlan for `use cuda REQUEST`, recorded as this shell's (origin shell): a bash/zsh
    hook, if also loaded, leaves it to direnv instead of undoing it."""
    from cudaswitch.switch import decide

    text = request_of(args)
    return decide.use(decide.load(paths, env), env, text, origin="shell")

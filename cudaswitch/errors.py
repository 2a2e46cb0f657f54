"""One error family, caught at one boundary (cli/main.py) and printed as one line."""

EXIT_ERROR = 1
EXIT_USAGE = 2


class CudaSwitchError(Exception):
    """A failure the user can act on: `message` is one line, `hint` says what to do."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str, hint: "str | None" = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self) -> str:
        text = "cudaswitch: error: " + self.message
        if self.hint:
            text += " (" + self.hint + ")"
        return inert(text)


def inert(text: str) -> str:
    """Messages quote paths from cloned repositories, and a directory name can hold a newline or a
    terminal escape: write control characters as escapes, so the error stays one line and inert."""
    return "".join(c if " " <= c != "\x7f" else repr(c)[1:-1] for c in text)


class UsageError(CudaSwitchError):
    exit_code = EXIT_USAGE


class BadRequest(CudaSwitchError):
    """A version request that cannot be parsed, or that a project file may not make."""


class ToolkitNotFound(CudaSwitchError):
    """No known toolkit matches a request; the message names every source searched."""


class ConfigError(CudaSwitchError):
    """config.toml cannot be read or written; the message names the file and line."""


class ProjectFileError(CudaSwitchError):
    """A project file (.cudaversion, .tool-versions, pyproject.toml) is refused as data."""

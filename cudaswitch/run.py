"""The one way cudaswitch starts a child process.

The shell may sit in a stranger's repository, so nothing there may run: the child's cwd is a fresh
private dir, its PATH keeps only absolute entries, and a Python child never gets its cwd as
sys.path[0] (PYTHONSAFEPATH). The user's PYTHONPATH and user site stay: their torch may live there.
Every child has a deadline, its own session (a timeout kills the whole group), stdin from
/dev/null and output read up to a cap. subprocess is imported only when a child really starts."""

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from subprocess import Popen
    from cudaswitch.toolkit import Env

MAX_OUTPUT = 4 << 20  # bytes kept per stream; the rest is read and dropped so the child never blocks
EXIT_GRACE = 1.0  # s to drain pipes a grandchild keeps open after the child itself exited


class Result:
    """returncode None means it did not run or did not finish; `error` then says why, in one line."""

    __slots__ = ("returncode", "stdout", "stderr", "error", "timed_out")

    def __init__(self, returncode: "int | None", stdout: bytes = b"", stderr: bytes = b"", error: str = "",
                 timed_out: bool = False) -> None:
        self.returncode, self.stdout, self.stderr, self.error = returncode, stdout, stderr, error
        self.timed_out = timed_out

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def safe_path(value: "str | None") -> str:
    """PATH with only absolute entries, in order; os.defpath when none is left."""
    kept = [d for d in (value or "").split(os.pathsep) if d.startswith("/")]
    return os.pathsep.join(kept) or os.defpath


def child_env(env: "Env | None") -> dict:
    """A copy of env fit for a child: safe PATH, and no current directory on a Python's sys.path."""
    out = dict(os.environ if env is None else env)
    out["PATH"] = safe_path(out.get("PATH"))
    out["PYTHONSAFEPATH"] = "1"
    return out


def run(argv: "Sequence[str]", env: "Env | None" = None, timeout: float = 10.0, cwd: "str | None" = None,
        merge_stderr: bool = False, on_line: "Callable[[str], object] | None" = None,
        max_output: int = MAX_OUTPUT) -> Result:
    """Run argv to completion or to `timeout` s; never raises for a child that cannot start or hangs.
    cwd, when given, is a private dir the caller made. on_line(text) gets each stdout line as it comes.
    An exception in the caller (Ctrl-C) kills the child's group before it propagates."""
    import shutil
    import tempfile

    if cwd is not None and not os.path.isabs(cwd):
        raise ValueError("child working directory must be absolute: %r" % cwd)
    private = tempfile.mkdtemp(prefix="cudaswitch-run-") if cwd is None else None
    try:
        return _run_in(list(argv), child_env(env), timeout, cwd or private, merge_stderr, on_line, max_output)
    finally:
        if private:
            shutil.rmtree(private, ignore_errors=True)


def _run_in(argv: "list[str]", env: dict, timeout: float, cwd: "str | None", merge_stderr: bool,
            on_line: "Callable[[str], object] | None", max_output: int) -> Result:
    import subprocess

    try:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                                start_new_session=True, close_fds=True)
    except (OSError, ValueError) as exc:
        return Result(None, error="cannot run %s: %s" % (argv[0], getattr(exc, "strerror", None) or exc))
    try:
        out, err, finished = _collect(proc, timeout, on_line, max_output)
    except BaseException:
        kill_group(proc)
        raise
    finally:
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
    kill_group(proc)  # whatever it left behind in its session goes too
    if not finished:
        why = "%s did not answer within %g s" % (os.path.basename(argv[0]), timeout)
        return Result(None, out, err, why, timed_out=True)
    return Result(proc.returncode, out, err)


def _collect(proc: "Popen[bytes]", timeout: float, on_line: "Callable[[str], object] | None",
             max_output: int) -> "tuple[bytes, bytes, bool]":
    """(stdout, stderr, finished) read until both pipes close and the child exits, or the deadline."""
    import selectors
    import subprocess
    import time

    deadline = time.monotonic() + timeout
    buffers = {s.fileno(): bytearray() for s in (proc.stdout, proc.stderr) if s}
    partial = bytearray()
    exited_at = None
    with selectors.DefaultSelector() as selector:
        for fd in buffers:
            selector.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if now >= deadline or (exited_at is not None and (not selector.get_map() or now - exited_at > EXIT_GRACE)):
                break
            if not selector.get_map():  # both pipes closed, the child not reaped yet: wait for it,
                try:  # not for a select with nothing to watch
                    proc.wait(timeout=max(0.0, deadline - now))
                except subprocess.TimeoutExpired:
                    pass
                continue
            for key, _ in selector.select(min(deadline - now, 0.25)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                buf = buffers[key.fd]
                buf += chunk[:max(0, max_output - len(buf))]
                if on_line and key.fd == proc.stdout.fileno():  # type: ignore[union-attr]
                    partial += chunk
                    *lines, rest = bytes(partial).split(b"\n")
                    partial[:] = rest[-max_output:]
                    for line in lines:
                        on_line(line.decode("utf-8", "replace").rstrip())
    if on_line and partial:
        on_line(bytes(partial).decode("utf-8", "replace").rstrip())
    finished = exited_at is not None or proc.poll() is not None
    out = bytes(buffers[proc.stdout.fileno()])  # type: ignore[union-attr]
    err = bytes(buffers[proc.stderr.fileno()]) if proc.stderr else b""
    return out, err, finished


def kill_group(proc: "Popen[bytes]") -> None:
    """SIGKILL the child's session and reap the child; never raises."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # the group is already gone
        pass
    try:
        proc.wait(timeout=5)
    except Exception:  # noqa: BLE001 - an unkillable child (D state) must not hang us
        pass

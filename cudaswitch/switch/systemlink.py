"""`system REQUEST`: repoint /usr/local/cuda, through update-alternatives where it manages the link
(dpkg's records stay true), else atomically. Without permission nothing changes and the error says so."""

import os

from cudaswitch.errors import CudaSwitchError
from cudaswitch.paths import Paths, resolve_in_root

LINK = "/usr/local/cuda"
TIMEOUT = 30


def repoint(request: str, dry_run: bool = False) -> str:
    """What `system REQUEST` did (or, with dry_run, would do), in one line; nothing when /usr/local/cuda
    already leads there (--set would turn update-alternatives' automatic mode manual for nothing)."""
    from cudaswitch.registry import discover
    from cudaswitch.registry.resolve import resolve

    paths = Paths()
    record = resolve(discover.load(paths, dict(os.environ)), request)
    link = paths.host(LINK)
    target = paths.unhost(record["root"])
    if os.path.isdir(link) and not os.path.islink(link):
        raise CudaSwitchError("%s is a real directory, not a link; refusing to replace it" % LINK)
    altdir = os.environ.get("CUDASWITCH_ALTDIR") or paths.host("/etc/alternatives")
    admindir = os.environ.get("CUDASWITCH_ADMINDIR") or paths.host("/var/lib/dpkg/alternatives")
    managed = os.path.islink(link) and os.path.dirname(os.readlink(link)) in (altdir, "/etc/alternatives")
    real, missing = resolve_in_root(paths, LINK)  # the host's chain, read inside its root (a test host, an image)
    if missing is None and os.path.realpath(real) == os.path.realpath(record["root"]):
        return "%s already points to %s (CUDA %s); nothing to change" % (LINK, target, record["version"])
    how = "update-alternatives --set cuda" if managed else "an atomic link swap"
    plan = "%s -> %s (CUDA %s) via %s" % (LINK, target, record["version"], how)
    if dry_run:
        return "would repoint " + plan
    if managed:
        _alternatives(link, record["root"], record["version"], altdir, admindir)
    else:
        _swap_link(link, target)
    return "repointed " + plan


def _swap_link(link: str, target: str) -> None:
    tmp = "%s.cudaswitch-%d" % (link, os.getpid())
    try:
        os.symlink(target, tmp)
        os.replace(tmp, link)
    except PermissionError:
        raise CudaSwitchError("cannot repoint %s: permission denied" % LINK,
                              "run it as root: sudo cudaswitch system ...") from None
    except OSError as exc:
        raise CudaSwitchError("cannot repoint %s: %s" % (LINK, exc.strerror)) from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _alternatives(link: str, root: str, version: "str | None", altdir: str, admindir: str) -> None:
    base = ["update-alternatives", "--altdir", altdir, "--admindir", admindir]
    query = _run(base + ["--query", "cuda"])
    if "Alternative: %s\n" % root not in query:
        numbers = [int(p) for p in (version or "0").split(".")[:2] if p.isdigit()]
        priority = str(sum(n * w for n, w in zip(numbers, (100, 1))))
        _run(base + ["--install", link, "cuda", root, priority], check=True)
    _run(base + ["--set", "cuda", root], check=True)


def _run(command: "list[str]", check: bool = False) -> str:
    from cudaswitch.run import run

    proc = run(command, timeout=TIMEOUT)
    if proc.returncode is None:
        raise CudaSwitchError("update-alternatives failed: %s" % proc.error)
    out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    if check and proc.returncode != 0:
        reason = (err.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
        if "ermission" in reason:
            raise CudaSwitchError("cannot repoint %s: %s" % (LINK, reason), "run it as root") from None
        raise CudaSwitchError("update-alternatives failed: " + reason)
    return out

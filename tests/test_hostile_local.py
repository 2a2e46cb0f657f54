"""Files cudaswitch replaces, caches it reads on every switch, config values and names it is given:
each case is what a hostile repository, a stray FIFO or a dotfiles setup puts in its way. Bad
input is one line on stderr, a non-zero exit, nothing on stdout, no traceback; a file that is not
cudaswitch's to replace (a FIFO, a device, a directory) is left exactly as it was."""

import json
import os
import stat
import subprocess
import sys

import pytest

from tests import kits
from tests.conftest import CUDASWITCH, Host


def one_line_error(proc, *words):
    assert proc.returncode != 0 and proc.stdout == "", (proc.returncode, proc.stdout)
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


def no_temp_files(directory):
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")] == []


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One node's real `audit --json` report to merge."""
    base = tmp_path_factory.mktemp("node")
    kits.install_classic_runtime12(base / "root" / "usr/local/cuda-12.4")
    host = Host(base / "root", base / "work")
    proc = host.run("audit", "--json", "--root", str(base / "root"), timeout=300)
    assert proc.returncode == 0, proc.stderr
    (base / "node01.json").write_text(proc.stdout)
    return host, base / "node01.json"


def merge_html(host, report_file, target):
    return subprocess.run([CUDASWITCH, "audit", "merge", str(report_file), "--html", str(target)],
                          capture_output=True, text=True, timeout=120, env=host.env, stdin=subprocess.DEVNULL)


def test_html_over_a_fifo_a_device_or_a_directory_is_refused(report, tmp_path):
    """`--html PATH` renamed its page over whatever PATH was: a FIFO a reader waits on became a file,
    and as root `--html /dev/stdout` (a link to the process's fd) turned it into one."""
    host, report_file = report
    fifo, device, directory = tmp_path / "fifo.html", tmp_path / "stdout.html", tmp_path / "dir.html"
    os.mkfifo(fifo)
    os.symlink("/dev/null", device)  # the shape of /dev/stdout: a link to a character device
    directory.mkdir()
    for target, kind in ((fifo, "FIFO"), (device, "device"), (directory, "directory")):
        one_line_error(merge_html(host, report_file, target), str(target), kind)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.readlink(device) == "/dev/null"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and list(directory.iterdir()) == []
    assert no_temp_files(tmp_path)


def test_html_through_a_link_to_a_file_keeps_the_link(report, tmp_path):
    host, report_file = report
    (tmp_path / "site").mkdir()
    real, link = tmp_path / "site" / "report.html", tmp_path / "report.html"
    real.write_text("old page")
    os.symlink(real, link)
    proc = merge_html(host, report_file, link)
    assert proc.returncode == 0, proc.stderr
    assert os.readlink(link) == str(real) and real.read_text().startswith("<!DOCTYPE html>")


def test_report_page_survives_a_malformed_filter_in_its_link(report, tmp_path):
    """A link such as report.html#filter=%E0%A4%A (a truncated escape) made decodeURIComponent throw,
    stopping the page's script: no filter, no 'only rows that differ'. In headless Chromium."""
    from tests import browser_support as browser

    host, report_file = report
    page = tmp_path / "report.html"
    assert merge_html(host, report_file, page).returncode == 0
    for fragment in ("#filter=%E0%A4%A", "#filter=%", "#filter=%ZZ", "#filter=%u0041", "#filter=node01"):
        dom_text, console = browser.load(page.as_uri() + fragment, tmp_path / "profile")
        assert console == [], (fragment, console)
        assert browser.Dom(dom_text).body.get("data-ready") == "1", fragment


@pytest.fixture
def dotfiles_host(host):
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    return host


def test_global_writes_through_a_symlinked_config(dotfiles_host, tmp_path):
    """A config.toml that is a link into a dotfiles repository was replaced by a regular file,
    silently cutting it off from the repository."""
    host = dotfiles_host
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "cudaswitch.toml").write_text('# mine\nverdict = "problems"\n')
    config = host.work / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    os.symlink(dotfiles / "cudaswitch.toml", config)
    for args, want in ((("global", "13.0"), 'default = "13.0"'), (("global", "--unset"), None)):
        proc = host.run(*args)
        assert proc.returncode == 0, proc.stderr
        assert os.readlink(config) == str(dotfiles / "cudaswitch.toml")
        text = (dotfiles / "cudaswitch.toml").read_text()
        assert 'verdict = "problems"' in text and (want is None) == ("default" not in text), text
    assert no_temp_files(dotfiles) and no_temp_files(config.parent)


def test_global_refuses_a_config_that_is_a_fifo(dotfiles_host):
    host = dotfiles_host
    config = host.work / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    os.mkfifo(config)
    one_line_error(host.run("global", "13.0", timeout=30), "config.toml")
    assert stat.S_ISFIFO(os.lstat(config).st_mode)


def planted_temp_links(repo, victim, count=3000):
    """Links at `.cudaversion.<pid>.tmp` for the next `count` process ids, as a repository can ship
    them: the old `local` opened that name for writing, following the link."""
    last = int(open("/proc/sys/kernel/ns_last_pid").read())
    top = int(open("/proc/sys/kernel/pid_max").read())
    for offset in range(1, count + 1):
        os.symlink(victim, repo / (".cudaversion.%d.tmp" % ((last + offset) % top)))


def test_local_follows_no_planted_link(dotfiles_host, tmp_path):
    host = dotfiles_host
    repo, victim = tmp_path / "repo", tmp_path / "victim-bashrc"
    repo.mkdir()
    victim.write_text("export KEEP=me\n")
    planted_temp_links(repo, victim)
    os.symlink(victim, repo / ".cudaversion")  # and .cudaversion itself: replaced, never written through
    proc = host.run("local", "13.0", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "export KEEP=me\n"
    assert not (repo / ".cudaversion").is_symlink() and (repo / ".cudaversion").read_text() == "13.0\n"
    left = [p for p in repo.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]
    assert left == []


@pytest.mark.parametrize("args", [("local", "13.0"), ("local", "--unset")])
def test_local_when_cudaversion_is_a_directory(dotfiles_host, tmp_path, args):
    repo = tmp_path / "repo"
    (repo / ".cudaversion").mkdir(parents=True)
    (repo / ".cudaversion" / "keep").write_text("x")
    one_line_error(dotfiles_host.run(*args, cwd=repo), ".cudaversion", "directory")
    assert (repo / ".cudaversion" / "keep").read_text() == "x" and no_temp_files(repo)


def settings_debris(path, kind):
    """What may sit where the settings cache belongs."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "parens":
        path.write_bytes(b"(" * 3000)  # a marshal tuple header asking for gigabytes
    elif kind == "zero-link":
        os.symlink("/dev/zero", path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "huge":
        with open(path, "wb") as handle:
            handle.truncate(1 << 30)
    elif kind == "foreign":
        import marshal

        path.write_bytes(marshal.dumps({"key": None, "settings": {"verdict": 5}}))


@pytest.mark.parametrize("kind", ["fifo", "parens", "zero-link", "directory", "huge", "foreign"])
def test_settings_cache_debris_is_a_miss(dotfiles_host, tmp_path, kind):
    """The parsed config's cache was read with a plain open(): a FIFO there hung `use`, the hook
    and so every prompt; 3 KB of `(` was a MemoryError. Each is now a miss, and the config decides."""
    host = dotfiles_host
    (host.work / "config").mkdir(parents=True)
    (host.work / "config" / "config.toml").write_text('verdict = "off"\n')
    cache = host.work / "cache"
    cache.mkdir()
    settings_debris(cache / "config.marshal", kind)
    project = tmp_path / "project"
    project.mkdir()
    (project / ".cudaversion").write_text("13.0\n")
    for args in (("use", "13.0", "--shell", "bash"), ("hook-env", "--shell", "bash")):
        proc = host.run(*args, cwd=project, timeout=60)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr)
        assert "CUDA_HOME=" in proc.stdout and proc.stderr == "", (args, proc.stderr)  # verdict = "off"


BAD_CONFIG = {
    "toolkits": ('["\\u0000"]', '["/opt/a\\u0000b"]', "[1]", '[""]', '"/opt/x"', "[[1]]", "[{a = 1}]"),
    "search_roots": ('["\\u0000"]', "[true]", '["%s"]' % ("x" * 5000)),
    "source_order": ('["\\u0000"]', '["nowhere"]', "[1]"),
    "default": ('"\\u0000"', "12", '"12.4; rm"'),
    "python": ('"\\u0000"', "[]"),
    "probe_timeout": ("nan", "-1", '"5"', "inf"),
    "verdict": ('"\\u0000"', "true"),
    "loader_path": ('"yes"',),
}


@pytest.mark.parametrize("key,value", [pytest.param(k, v, id="%s-%d" % (k, i))
                                       for k, values in BAD_CONFIG.items() for i, v in enumerate(values)])
def test_bad_config_value_is_one_line_naming_the_key(dotfiles_host, tmp_path, key, value):
    """`toolkits = ["\\u0000"]` was a StopIteration traceback in every command, the hook included."""
    host = dotfiles_host
    (host.work / "config").mkdir(parents=True)
    (host.work / "config" / "config.toml").write_text("%s = %s\n" % (key, value))
    project = tmp_path / "project"
    project.mkdir()
    (project / ".cudaversion").write_text("13.0\n")
    for args in (("list",), ("hook-env", "--shell", "bash"), ("current",)):
        proc = host.run(*args, cwd=project, timeout=60)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
        if proc.returncode != 0:
            one_line_error(proc, key)
    one_line_error(host.run("list", cwd=project), key)


@pytest.fixture
def kernel_host(dotfiles_host, tmp_path):
    dotfiles_host.env["JUPYTER_DATA_DIR"] = str(tmp_path / "jupyter")
    return dotfiles_host


FOREIGN_METADATA = ("[]", '"x"', "null", "5", '{"cudaswitch": []}', '{"cudaswitch": "mine"}', "[" * 100000)


@pytest.mark.parametrize("metadata", FOREIGN_METADATA, ids=lambda m: m[:12])
def test_a_foreign_kernel_json_of_any_shape_is_not_ours(kernel_host, tmp_path, metadata):
    """A kernel.json someone else wrote with `"metadata": []` was an AttributeError in kernel
    list, remove and install."""
    spec = tmp_path / "jupyter" / "kernels" / "cuda-13.0" / "kernel.json"
    spec.parent.mkdir(parents=True)
    spec.write_text('{"argv": ["python3"], "display_name": "theirs", "metadata": %s}' % metadata)
    before = spec.read_text()
    listing = kernel_host.run("kernel", "list", "--json")
    assert listing.returncode == 0 and json.loads(listing.stdout) == [], listing.stderr
    for args in (("kernel", "remove", "cuda-13.0"), ("kernel", "install", "13.0", "--python", sys.executable)):
        one_line_error(kernel_host.run(*args, timeout=180), "not installed by cudaswitch")
    assert spec.read_text() == before


@pytest.mark.parametrize("name", ["abc\n", "abc\r", "\nabc", "a b", "abc/", "../x", ".", "-x", "é",
                                  "a" * 65, "abc\u2028"])
def test_kernel_names_that_are_not_plain_are_refused(kernel_host, tmp_path, name):
    """`--name $'abc\\n'` was accepted (the name check's `$` matched before the newline), writing a
    kernels/ directory whose name ends in a newline."""
    proc = kernel_host.run("kernel", "install", "13.0", "--python", sys.executable, "--name", name)
    one_line_error(proc, "kernel name")
    kernels = tmp_path / "jupyter" / "kernels"
    assert not kernels.exists() or list(kernels.iterdir()) == []

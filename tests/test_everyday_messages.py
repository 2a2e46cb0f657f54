"""Messages a user meets in everyday use say what is true, each checked through the real command:
`local` of a toolkit that cannot compile says so in its one line; `system X` when /usr/local/cuda
already leads to X says so instead of "would repoint"; a refused path is quoted by whole
components; "not found" suggests no release that may not exist; the hook's error on `cd` names the
project file that asked; sizes are in one unit (IEC)."""

import os

import pytest

from tests import kits, shellrun


def test_local_of_an_incomplete_toolkit_says_so_in_one_line(standard_host, tmp_path):
    """`local 12.4` where 12.4 is runtime-only (no nvcc): written, and the line says builds will fail."""
    proc = standard_host.run("local", "12.4", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("wrote %s: 12.4" % (tmp_path / ".cudaversion"))
    assert "no nvcc" in line and "cannot compile" in line
    assert (tmp_path / ".cudaversion").read_text() == "12.4\n"


def test_local_of_a_complete_toolkit_says_nothing_more(standard_host, tmp_path):
    proc = standard_host.run("local", "13.1", cwd=tmp_path)
    assert proc.returncode == 0 and "cannot compile" not in proc.stderr and "missing" not in proc.stderr


def system_host(host):
    for v in ("13.0", "13.1"):
        kits.install_classic(kits.cuda13(v), host.path("/usr/local/cuda-" + v), v)
    os.symlink("/usr/local/cuda-13.0", host.path("/usr/local/cuda"))
    return host


def test_system_dry_run_to_where_it_already_points_says_so(host):
    system_host(host)
    link = host.path("/usr/local/cuda")
    proc = host.run("system", "13.0", "--dry-run")
    assert proc.returncode == 0 and proc.stdout == ""
    version = host.list_json()[str(host.path("/usr/local/cuda-13.0"))]["version"]
    assert proc.stderr.strip() == \
        "/usr/local/cuda already points to /usr/local/cuda-13.0 (CUDA %s); nothing to change" % version
    other = host.run("system", "13.1", "--dry-run")
    assert other.stderr.startswith("would repoint /usr/local/cuda -> /usr/local/cuda-13.1 ")
    before = os.lstat(link).st_mtime_ns
    again = host.run("system", "13.0")  # not dry: nothing to do, and nothing done
    assert again.returncode == 0 and "already points to" in again.stderr
    assert os.readlink(link) == "/usr/local/cuda-13.0" and os.lstat(link).st_mtime_ns == before


def test_a_refused_path_is_quoted_by_whole_components(standard_host, tmp_path):
    """A .cudaversion holding a site path is refused; the quote ends after a whole directory name,
    never inside one ('/opt/site/ro'... read as a directory called ro)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".cudaversion").write_text("/opt/site/root/cuda-12.4\n")
    proc = standard_host.run("hook-env", "--shell", "bash", cwd=repo)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "'/opt/site/root/'..." in proc.stderr, proc.stderr
    assert "'/opt/site/ro'" not in proc.stderr


def test_not_found_suggests_no_release_that_does_not_exist(standard_host):
    """`use 17.2` and `use 99`: the hint names the nearest toolkit here and where the releases to
    install are listed, never `cudaswitch install 17.2` (there is no CUDA 17.2 to install)."""
    for request in ("17.2", "99"):
        proc = standard_host.run("use", request, "--shell", "bash")
        assert proc.returncode != 0 and proc.stdout == ""
        assert "nearest: 13." in proc.stderr and "`cudaswitch install --list`" in proc.stderr
        assert "install %s" % request not in proc.stderr and "install 17" not in proc.stderr


def test_sizes_are_in_one_unit(host):
    """audit's duplicate hint gave "%d MB in all" where every other size is IEC (MiB, GiB):
    a toolkit installed twice is sized in the unit install and list use."""
    import json
    import re

    for root in ("/usr/local/cuda-13.1", "/opt/cuda-13.1-copy"):
        kits.install_classic(kits.cuda13("13.1"), host.path(root), "13.1")
    proc = host.run("audit", "--json", timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    [dup] = [c for c in json.loads(proc.stdout)["checks"] if c["id"] == "toolkit.duplicate"]
    assert re.fullmatch(r"\d+(\.\d)? (KiB|MiB|GiB) in all", dup["hint"]), dup["hint"]


@pytest.mark.parametrize("name, text", [(".cudaversion", "99.9\n"),
                                        ("pyproject.toml", '[tool.cudaswitch]\ncuda = "99.9"\n')])
def test_the_hooks_error_on_cd_names_the_project_file(standard_host, tmp_path, name, text):
    """A real bash with the hook: `cd` into a repo pinning a toolkit this host lacks prints one
    error line that says which file asked for it (the user did not type the request)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / name).write_text(text)
    sh = shellrun.Interactive("bash", standard_host.env, str(tmp_path))
    try:
        sh.run('eval "$(cudaswitch init bash)"')
        out = sh.run("cd %s" % repo)
    finally:
        sh.close()
    errors = [line for line in out.splitlines() if line.startswith("cudaswitch: error: ")]
    assert len(errors) == 1, out
    assert errors[0].startswith("cudaswitch: error: %s: no toolkit matches '99.9'" % (repo / name)), out

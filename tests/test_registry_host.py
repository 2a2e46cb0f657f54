"""`list`, `which`, `global`, `config path` through the real CLI,
on this machine and on the standard test host of real toolkits (tests/conftest.py)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import kits
from tests.conftest import CUDASWITCH, HOME, Host
from tests.registry_helpers import LOGGING_NVCC, logging_toolkit, nvcc_version, runs

SOURCES = ["user", "managed", "system", "module", "spack", "conda", "pip"]


@pytest.fixture
def own(standard_host, tmp_path):
    """The standard host's toolkits with this test's own cache, config and data dirs: the host is
    shared by the session, and a test that sets a default must not change what the others see."""
    mine = Host(standard_host.root, tmp_path / "work")
    dirs = {k: mine.env[k] for k in ("CUDASWITCH_CACHE_DIR", "CUDASWITCH_CONFIG_DIR", "CUDASWITCH_DATA_DIR")}
    mine.env = {**standard_host.env, **dirs}
    return mine


# ---------------------------------------------------------------- 1. this machine


def _machine_root(tmp_path):
    """'' on a machine with NVIDIA's /usr/local/cuda-13.0 (the dev machine: a user's host, no root
    prefix); elsewhere (a fresh CI box) the same layout, built from the 13.0 wheels as NVIDIA's
    runfile lays it out, with /usr/local/cuda pointing at it, under a root prefix."""
    if os.path.isdir("/usr/local/cuda-13.0"):
        return ""
    root = tmp_path / "machine"
    kits.install_classic(kits.cuda13("13.0"), root / "usr/local/cuda-13.0", "13.0", version_json=False)
    os.symlink("/usr/local/cuda-13.0", root / "usr/local/cuda")
    return str(root)


def test_this_machine_lists_usr_local_cuda_13_0_as_ok_default(tmp_path):
    """Acceptance 1, as a user runs it: only cudaswitch's own dirs kept out of $HOME."""
    prefix = _machine_root(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDASWITCH_")}
    env.update({"CUDASWITCH_CACHE_DIR": str(tmp_path / "cache"), "CUDASWITCH_CONFIG_DIR": str(tmp_path / "config"),
                "CUDASWITCH_DATA_DIR": str(tmp_path / "data")})
    if prefix:
        env["CUDASWITCH_ROOT"] = prefix

    def run(*args):
        proc = subprocess.run([CUDASWITCH, *args], capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc

    root = prefix + "/usr/local/cuda-13.0"
    items = {item["root"]: item for item in json.loads(run("list", "--json").stdout)}
    cuda = items[root]
    assert cuda["version"].startswith("13.0.") and cuda["short"] == "13.0"
    assert (cuda["status"], cuda["problems"], cuda["default"]) == ("ok", [], True)
    assert "system" in cuda["sources"] and cuda["nvcc"] == root + "/bin/nvcc"
    assert [r for r, item in items.items() if item["default"]] == [root]
    rows = [line.split() for line in run("list").stdout.splitlines()]
    # Active (*) exactly when this shell's nvcc leads there (the dev machine's /usr/local/bin/nvcc wrapper does)
    in_use = json.loads(run("current", "--json").stdout)["root"] == root
    assert cuda["active"] == in_use
    assert ["*d" if in_use else "d", cuda["version"], "ok"] == next(r for r in rows if r[-1] == root)[:3]


# ---------------------------------------------------------------- 2. list on the standard host


def test_list_json_has_every_toolkit_with_version_status_and_sources(standard_host):
    h = standard_host
    items = h.list_json()
    cuda12 = kits.dist_versions(kits.cuda12_runtime().parent)["nvidia-cuda-nvcc-cu12"]
    conda = str(h.path(HOME + "/miniconda3/envs/cu13"))
    pip = str(kits.site_packages(h.path("/opt/venv")) / "nvidia" / "cu13")
    expected = {  # root: (version, status, sources)
        str(h.path("/usr/local/cuda-13.1")): (nvcc_version("13.1"), "ok", ["system", "module"]),
        str(h.path("/usr/local/cuda-13.0")): (nvcc_version("13.0"), "ok", ["system"]),
        str(h.path("/usr/local/cuda-12.4")): (cuda12, "incomplete", ["system"]),
        conda: (nvcc_version("13.0"), "ok", ["conda"]),
        pip: (nvcc_version("13.0"), "incomplete", ["pip"]),  # its static cudart is not where nvcc links from
    }
    assert {root: (i["version"], i["status"], i["sources"]) for root, i in items.items()} == expected
    assert [root for root, i in items.items() if i["default"]] == [str(h.path("/usr/local/cuda-13.0"))]
    assert not any(i["active"] for i in items.values())
    for _root, item in items.items():
        assert item["short"] == ".".join(item["version"].split(".")[:2])
        if item["status"] == "ok":
            assert item["problems"] == [] and item["nvcc"] and os.access(item["nvcc"], os.X_OK)
    assert items[pip]["nvcc"] == pip + "/bin/nvcc"


def test_list_json_keys_and_order_follow_design(standard_host):
    listed = json.loads(standard_host.run("list", "--json", check=True).stdout)
    keys = {"version", "short", "root", "sources", "nvcc", "status", "problems", "default", "active"}
    assert all(keys <= set(item) for item in listed)
    versions = [tuple(map(int, item["version"].split("."))) for item in listed]
    assert versions == sorted(versions, reverse=True)  # newest first


def test_list_json_piped_gives_the_same_toolkits_and_flags_as_on_a_terminal(own, tmp_path):
    """Piped, `list --json` is one line put together from what discovery rendered once; on a
    terminal (util-linux `script` gives it one) it is indented and built from the records. A script
    and a person must read the same objects, "default" and "active" included, after a `use` too."""
    script_tool = kits.require("script")
    shell = ('eval "$(cudaswitch use 13.1 --shell bash)" || exit 9\n'
             'cudaswitch list --json > piped.json\n'
             '%s -qec "cudaswitch list --json" /dev/null > tty.txt\n' % script_tool)
    env = dict(own.env, PATH="/usr/bin:/bin:" + os.path.dirname(CUDASWITCH))
    done = subprocess.run([kits.require("bash"), "--norc", "--noprofile", "-c", shell], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    piped, tty = (tmp_path / "piped.json").read_text(), (tmp_path / "tty.txt").read_text()
    assert piped.count("\n") == 1 and tty.count("\n") > len(json.loads(piped))  # one line / indented
    assert json.loads(piped) == json.loads(tty)
    assert [i["short"] for i in json.loads(piped) if i["active"]] == ["13.1"]
    assert sum(i["default"] for i in json.loads(piped)) == 1


def test_the_module_a_toolkit_is_listed_by_is_the_same_on_every_refresh(host):
    """Three site modulefiles for one toolkit (cuda/13.1, cuda/13.1-gcc11, cudatoolkit/13.1, as
    the benchmark's large host has): Lmod's spider reports them in a different order from run to
    run, and `list` named whichever came first; now the first by name, every time."""
    kits.require("lmod")
    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    modules = host.work / "modules"
    for name in ("13.1", "13.1-gcc11"):
        kits.write_cuda_module(modules, name, host.path("/usr/local/cuda-13.1"))
    other = kits.write_cuda_module(modules / "x", "13.1", host.path("/usr/local/cuda-13.1"))
    (modules / "cudatoolkit").mkdir()
    os.rename(other, modules / "cudatoolkit" / "13.1.lua")
    env = kits.lmod_env(modules, host.env)
    seen = set()
    for _ in range(6):
        [item] = json.loads(host.run("list", "--json", "--refresh", env=env, check=True).stdout)
        seen.add(item["origins"]["module"])
    assert seen == {"cuda/13.1"}


def test_runtime_only_12_is_incomplete_with_a_problem_naming_the_missing_nvcc(standard_host):
    item = standard_host.list_json()[str(standard_host.path("/usr/local/cuda-12.4"))]
    assert item["nvcc"] is None and item["status"] == "incomplete"
    assert len(item["problems"]) == 1
    problem = item["problems"][0]
    assert "no nvcc" in problem and str(standard_host.path("/usr/local/cuda-12.4/bin")) in problem


def test_torchs_runtime_wheels_are_listed_with_their_version(host):
    """What `pip install torch` (a cu130 build) leaves: nvidia/cu13 with libraries and headers, the
    nvidia-cuda-runtime wheel's dist-info in site-packages, no nvcc wheel. Seen on an H200 machine
    as `?  broken: no version found`; the runtime wheel says 13.0.96."""
    wheels = kits.cuda13("13.0")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(host.path("/opt/torchenv"))], check=True,
                   timeout=300)
    site = kits.site_packages(host.path("/opt/torchenv"))
    for part in ("lib", "include"):  # hard links: a link leaving the host's root is not followed
        shutil.copytree(wheels / part, site / "nvidia" / "cu13" / part, symlinks=True, copy_function=os.link)
    [runtime] = wheels.parent.parent.glob("nvidia_cuda_runtime-13.0.*.dist-info")
    shutil.copytree(runtime, site / runtime.name)
    # beside it CUDA 12.4's split runtime wheel, which another package pulled in: each keeps its own
    split = kits.cuda12_runtime()
    shutil.copytree(split / "cuda_runtime", site / "nvidia" / "cuda_runtime", symlinks=True, copy_function=os.link)
    [runtime12] = split.parent.glob("nvidia_cuda_runtime_cu12-*.dist-info")
    shutil.copytree(runtime12, site / runtime12.name)
    host.env["VIRTUAL_ENV"] = "/opt/torchenv"
    listed = host.list_json()
    item = listed[str(site / "nvidia" / "cu13")]
    assert item["version"] == runtime.name.removesuffix(".dist-info").split("-")[1] == "13.0.96"
    assert item["status"] == "incomplete" and item["nvcc"] is None
    assert [p.split(":")[0] for p in item["problems"]] == ["no nvcc in %s/bin" % (site / "nvidia" / "cu13")]
    assert listed[str(site / "nvidia")]["version"] == runtime12.name.removesuffix(".dist-info").split("-")[1]
    assert listed[str(site / "nvidia")]["version"].startswith("12.4.")


def test_list_table_shows_each_toolkit_and_the_default(standard_host):
    proc = standard_host.run("list", check=True)
    rows = {line.split()[-1]: line.replace("(nvcc ", "").replace("(", "").replace(")", "").split()[:-1]
            for line in proc.stdout.splitlines()[1:]}
    # [mark,] version, status, driver, sources; the mark column is blank unless active (*) or default (d);
    # no driver on the test host: whether it runs here is unknown
    assert rows[str(standard_host.path("/usr/local/cuda-13.0"))] == ["d", nvcc_version("13.0"), "ok", "unknown",
                                                                     "system"]
    # version.json names the release 13.1.0: shown first, as install names it, then nvcc's version
    assert rows[str(standard_host.path("/usr/local/cuda-13.1"))] == ["13.1.0", nvcc_version("13.1"), "ok", "unknown",
                                                                     "system,module"]
    assert rows[str(standard_host.path("/usr/local/cuda-12.4"))][:3] == ["12.4.1", "12.4.131", "incomplete"]
    assert len(rows) == 5
    assert "no nvcc in" in proc.stderr  # problems go to stderr, under the table


def test_conda_toolkit_is_switched_through_a_view_without_the_envs_python(standard_host):
    """Switching rule: a conda env's python/pip/libstdc++/libssl must not come first."""
    proc = standard_host.run("use", "conda:13", "--shell", "json", check=True)
    new = json.loads(proc.stdout)["set"]
    conda = standard_host.path(HOME + "/miniconda3/envs/cu13")
    view_bin = Path(new["PATH"].split(":")[0])
    view_lib = Path(new["LD_LIBRARY_PATH"].split(":")[0])
    assert new["CUDA_HOME"] == str(conda)
    assert os.access(view_bin / "nvcc", os.X_OK) and not (view_bin / "python").exists()
    assert not (view_bin / "pip").exists() and view_bin != conda / "bin"
    assert list(view_lib.glob("libcudart.so*"))
    assert not (view_lib / "libstdc++.so.6").exists() and not (view_lib / "libssl.so.3").exists()
    out = subprocess.run([view_bin / "nvcc", "--version"], capture_output=True, text=True, timeout=60).stdout
    assert "release 13.0, V" + nvcc_version("13.0") in out  # the view's nvcc is the env's, and runs


def test_a_removed_view_is_rebuilt_before_use(standard_host, tmp_path):
    """Someone cleans ~/.cache/cudaswitch/views (or tmpreaper does): `use` must not hand out a PATH
    entry that no longer exists."""
    env = {"CUDASWITCH_CACHE_DIR": str(tmp_path / "cache")}
    first = json.loads(standard_host.run("use", "conda:13", "--shell", "json", env=env, check=True).stdout)
    view_bin = Path(first["set"]["PATH"].split(":")[0])
    # tmpreaper deletes the view's files and leaves the link to them; a person deletes all views
    for removed in (view_bin.parent.resolve(), view_bin.parent.parent):
        shutil.rmtree(removed)
        again = json.loads(standard_host.run("use", "conda:13", "--shell", "json", env=env, check=True).stdout)
        assert os.access(Path(again["set"]["PATH"].split(":")[0]) / "nvcc", os.X_OK), removed


# ---------------------------------------------------------------- 3. which


@pytest.mark.parametrize("args, expected", [
    (["13"], "/usr/local/cuda-13.1"),
    ([">=13.0,<13.1"], "/usr/local/cuda-13.0"),  # 13.0 in system, conda and pip: system wins the tie
    (["system"], "/usr/local/cuda-13.0"),
    (["latest"], "/usr/local/cuda-13.1"),
    (["module:13"], "/usr/local/cuda-13.1"),
    # The issue says `which conda:12` for a 12.x conda env; the standard host's env holds cuda-nvcc 13.0.
    (["conda:13"], HOME + "/miniconda3/envs/cu13"),
    (["conda:13.0"], HOME + "/miniconda3/envs/cu13"),
    (["13.1", "nvcc"], "/usr/local/cuda-13.1/bin/nvcc"),
    (["12.4", "ptxas"], "/usr/local/cuda-12.4/bin/ptxas"),  # incomplete is still usable for what it has
    ([], "/usr/local/cuda-13.0"),  # no request: the default
])
def test_which(standard_host, args, expected):
    proc = standard_host.run("which", *args, check=True)
    assert proc.stdout == str(standard_host.path(expected)) + "\n"


def test_which_pip_gives_the_venv_wheels(standard_host):
    proc = standard_host.run("which", "pip:13", "nvcc", check=True)
    assert proc.stdout.strip() == str(kits.site_packages(standard_host.path("/opt/venv")) / "nvidia/cu13/bin/nvcc")


def test_which_not_found_names_request_sources_versions_and_nearest(standard_host):
    proc = standard_host.run("which", "11.8")
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert "'11.8'" in line
    positions = [line.index(source) for source in SOURCES]  # every source, in the order searched
    assert positions == sorted(positions)
    for version in (nvcc_version("13.1"), nvcc_version("13.0"), "12.4."):
        assert version in line
    assert "nearest: 12.4" in line


def test_which_not_found_in_one_source_names_only_that_source(standard_host):
    line = standard_host.run("which", "conda:12").stderr.strip()
    assert "'conda:12' in conda " in line and "system" not in line.split("(found")[0]


def test_which_tool_that_is_missing_is_one_line(standard_host):
    proc = standard_host.run("which", "12.4", "nvcc")
    assert proc.returncode == 1 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and "has no nvcc" in proc.stderr


# ---------------------------------------------------------------- global, config path


def test_global_sets_and_unsets_the_default(own):
    config = Path(own.env["CUDASWITCH_CONFIG_DIR"]) / "config.toml"
    default = lambda: [r for r, i in own.list_json().items() if i["default"]]  # noqa: E731
    system13 = str(own.path("/usr/local/cuda-13.0"))
    assert default() == [system13]  # /usr/local/cuda's target before any global

    own.run("global", "13.1", check=True)
    assert 'default = "13.1"' in config.read_text()
    assert default() == [str(own.path("/usr/local/cuda-13.1"))]
    assert own.run("which", check=True).stdout.strip() == str(own.path("/usr/local/cuda-13.1"))

    own.run("global", "13.0", check=True)  # system, conda and pip have 13.0: source order picks system
    assert default() == [system13]
    own.run("global", "conda:13.0", check=True)
    assert default() == [str(own.path(HOME + "/miniconda3/envs/cu13"))]

    own.run("global", "--unset", check=True)
    assert "default" not in config.read_text()
    assert default() == [system13]


def test_global_refuses_what_it_cannot_resolve_and_writes_nothing(own):
    config = Path(own.env["CUDASWITCH_CONFIG_DIR"]) / "config.toml"
    proc = own.run("global", "11.8")
    assert proc.returncode == 1 and "'11.8'" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not config.exists()
    assert own.run("global").returncode == 1 and own.run("global", "13", "--unset").returncode == 2
    missing_path = own.run("global", "/opt/no-such-cuda")  # a path is refused as such, found or not
    assert missing_path.returncode == 2 and "not a path" in missing_path.stderr
    assert not config.exists()


def test_config_path_follows_overrides_and_xdg(own, tmp_path):
    assert own.run("config", "path", check=True).stdout == own.env["CUDASWITCH_CONFIG_DIR"] + "/config.toml\n"
    env = {k: v for k, v in own.env.items() if k != "CUDASWITCH_CONFIG_DIR"}
    xdg = subprocess.run([CUDASWITCH, "config", "path"], capture_output=True, text=True, timeout=60,
                         env={**env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert xdg.stdout == str(tmp_path / "xdg/cudaswitch/config.toml") + "\n"
    env.pop("XDG_CONFIG_HOME", None)
    home = subprocess.run([CUDASWITCH, "config", "path"], capture_output=True, text=True, timeout=60,
                          env={**env, "HOME": str(tmp_path / "home")})
    assert home.stdout == str(tmp_path / "home/.config/cudaswitch/config.toml") + "\n"


# ---------------------------------------------------------------- 5. a warm list runs no subprocess

# Runs the real entry point with an audit hook that reports every process start to stderr.
SPAWN_PROBE = """
import sys
def hook(event, args):
    if event in ("subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.spawn", "os.fork",
                 "os.forkpty", "pty.spawn"):
        sys.stderr.write("SPAWN %s %r\\n" % (event, args[:2]))
sys.addaudithook(hook)
from cudaswitch.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def spawns(host, *args):
    proc = subprocess.run([sys.executable, "-c", SPAWN_PROBE, *args], capture_output=True, text=True,
                          env=host.env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, [line for line in proc.stderr.splitlines() if line.startswith("SPAWN ")]


def test_warm_list_starts_no_process_at_all(own):
    """Cold: Lmod's spider and each nvcc run. Warm: nothing, not even Lmod."""
    cold_out, cold = spawns(own, "list", "--json")
    assert any("spider" in s for s in cold) and any("/bin/nvcc" in s for s in cold), cold
    warm_out, warm = spawns(own, "list", "--json")
    assert warm == [] and warm_out == cold_out
    for args in (("which", "13.1", "nvcc"), ("list",)):
        assert spawns(own, *args)[1] == [], args
    spawns(own, "use", "13.1", "--shell", "json")  # a first use may verify (cached after)
    assert spawns(own, "use", "13.1", "--shell", "json")[1] == []


def test_nvcc_runs_once_then_never_until_something_watched_changes(host):
    root, log = logging_toolkit(host, "/usr/local/cuda-13.0")
    first = host.list_json()
    assert first[str(root)]["version"] == nvcc_version("13.0") and runs(log) == 1
    assert host.list_json() == first and runs(log) == 1
    host.run("which", "13", "nvcc", check=True)
    assert runs(log) == 1

    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")  # /usr/local changed
    rescanned = host.list_json()
    assert str(host.path("/usr/local/cuda-13.1")) in rescanned and len(rescanned) == 2
    assert runs(log) == 1  # the rescan reuses the probe of the unchanged nvcc (path, mtime, size)

    upgraded = root / "bin/nvcc.new"  # as package managers replace a file: write beside it, rename
    upgraded.write_text(LOGGING_NVCC.format(log=log) + "# upgraded\n")
    upgraded.chmod(0o755)
    os.rename(upgraded, root / "bin/nvcc")
    assert host.list_json()[str(root)]["status"] == "ok" and runs(log) == 2  # a new nvcc is probed again


def test_a_version_file_rewritten_in_place_is_seen_without_refresh(host):
    """version.json rewritten in place (no directory mtime changes; ctime does) is part of the
    cache's key: the next `list` reads it again, as `list --refresh` does."""
    root = kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    version_json = kits.detach(root / "version.json")  # its own inode before the cache is made
    assert host.list_json()[str(root)]["version"] == nvcc_version("13.1")
    data = json.loads(version_json.read_text())
    data["cuda_nvcc"]["version"] = "13.1.999"
    with open(version_json, "r+") as handle:  # in place: no directory mtime changes
        handle.write(json.dumps(data))
        handle.truncate()
    assert host.list_json()[str(root)]["version"] == "13.1.999"
    assert host.list_json("--refresh")[str(root)]["version"] == "13.1.999"
    assert host.list_json()[str(root)]["version"] == "13.1.999"  # and the refreshed result is cached

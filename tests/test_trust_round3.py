"""A stranger on a shared host against cudaswitch's trust rules: another local user (`nobody`,
which CI, running as root, hands files to with chown), a loose umask, a crafted CUDASWITCH_STATE.
Each case runs the real command (and real bash where `eval` matters); a program the attacker
wrote leaves a marker file when it runs, and the test asserts the marker is not there. The
hand-made toolkit dirs mirror a cluster login node's /tmp and a user's ~/.config under umask 000."""

import os
import subprocess
import sys

import pytest

from cudaswitch.statecodec import encode

from tests import kits
from tests.conftest import CUDASWITCH
from tests.test_cache_private import mode, other_user_available, run
from tests.shellrun import script

NOBODY = 65534


def trap(directory, name, marker, owner=NOBODY, text="echo 'Cuda compilation tools, release 13.0, V13.0.99'"):
    """`directory`/`name`, a program another user wrote: it leaves `marker` when it runs."""
    directory.mkdir(parents=True, exist_ok=True)
    program = directory / name
    program.write_text("#!/bin/sh\ntouch '%s'\n%s\n" % (marker, text))
    program.chmod(0o755)
    for path in (directory, program):
        os.chown(path, owner, owner)
    return program


def test_config_written_under_umask_000_is_private_and_another_users_edit_runs_nothing(host, tmp_path):
    """umask 000 made ~/.config/cudaswitch 0777 and config.toml 0666: another user added their
    dir to `toolkits`, and the next `list` ran their nvcc (and `use` would put it first)."""
    other_user_available()
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    assert run(host, "global", "13.0", umask=0).returncode == 0
    config = host.work / "config"
    assert mode(config) == 0o700 and mode(config / "config.toml") == 0o600
    marker = tmp_path / "ran"
    trap(host.path("/opt/theirs/bin"), "nvcc", marker)
    (host.path("/opt/theirs/lib64")).mkdir()
    # what they could have done to the loose file: rewritten it with their toolkit registered
    text = (config / "config.toml").read_text() + 'toolkits = ["/opt/theirs"]\n'
    for owner, bits in ((NOBODY, 0o644), (os.geteuid(), 0o666)):
        (config / "config.toml").write_text(text)
        os.chmod(config / "config.toml", bits)
        os.chown(config / "config.toml", owner, owner)
        for args in (("list",), ("use", "13.0", "--shell", "bash")):
            proc = run(host, *args)
            assert proc.returncode != 0 and proc.stdout == "" and "Traceback" not in proc.stderr
            assert "config.toml: not read" in proc.stderr, proc.stderr
            assert not marker.exists(), args
    assert (config / "config.toml").read_text() == text  # refused, never lost


def test_a_crafted_state_cannot_make_off_put_another_users_dir_on_path(host, tmp_path):
    """A state whose PATH "before" names a dir another user owns: `off`, eval'd in real bash,
    put it first, and the next `ls` ran their program. What it restores from other users goes,
    and so does a dir they may make later (in a dir all may write) and an empty entry (the cwd)."""
    other_user_available()
    os.chmod(tmp_path, 0o1777)  # /tmp as it is
    marker = tmp_path / "ran"
    theirs = tmp_path / "theirs"
    trap(theirs, "ls", marker, text="")
    compiler = trap(tmp_path / "cc", "gcc", marker, text="")
    env = dict(host.env)
    state = {"v": 2, "root": "/usr/local/cuda-13.0", "version": "13.0.88", "origin": "shell", "file": None,
             "scalars": {"NVCC_CCBIN": (str(compiler), None),
                         "NVCC_PREPEND_FLAGS": ("-ccbin %s" % compiler, "-ccbin /usr/bin/gcc")},
             "lists": {"PATH": ("%s:%s:%s:" % (theirs, tmp_path / "later", env["PATH"]), env["PATH"], 0)}}
    env.update(CUDASWITCH_STATE=encode(state), NVCC_PREPEND_FLAGS="-ccbin /usr/bin/gcc")
    proc = script("bash", ['eval "$(cudaswitch off --shell bash)"', "ls >/dev/null",
                           'echo "PATH=$PATH"', 'echo "CCBIN=${NVCC_CCBIN-unset} $NVCC_PREPEND_FLAGS"'], env)
    assert proc.returncode == 0 and not marker.exists(), proc.stdout
    assert str(theirs) not in proc.stdout and "CCBIN=unset -ccbin /usr/bin/gcc" in proc.stdout
    assert "later" not in proc.stdout and "PATH=%s\n" % env["PATH"] in proc.stdout  # nor "" (the cwd)
    assert "other users may change" in proc.stderr and "Traceback" not in proc.stderr
    # `use` switches from the same "before": it must not carry their dir either
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    proc = script("bash", ['eval "$(cudaswitch use 13.0 --shell bash --no-verify)"', "ls >/dev/null",
                           'echo "PATH=$PATH"'], env)
    assert proc.returncode == 0 and not marker.exists() and str(theirs) not in proc.stdout, proc.stderr


def test_a_kernel_spec_written_under_umask_000_is_private(host, tmp_path):
    """kernel.json names the program Jupyter starts: under umask 000 it was 0666 in 0777 dirs,
    and another user's argv would run as us when the notebook opens."""
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    data = tmp_path / "jupyter"
    proc = run(host, "kernel", "install", "13.0", "--python", sys.executable, umask=0,
               env={"JUPYTER_DATA_DIR": str(data)})
    assert proc.returncode == 0, proc.stderr
    (spec,) = data.glob("kernels/*/kernel.json")
    assert [mode(p) for p in (data, data / "kernels", spec.parent)] == [0o700] * 3 and mode(spec) == 0o600


def test_off_still_puts_back_a_toolkit_of_the_site_owned_by_another_user(host):
    """What the rule above must not break: a site's CUDA tree owned by its software account
    (EasyBuild installs as `easybuild`), on PATH before `use` took it off: `off` puts it back."""
    other_user_available()
    site = host.path("/usr/local/cuda-13.0")
    kits.install_classic(kits.cuda13("13.0"), site, "13.0")
    kits.install_classic(kits.cuda13("13.1"), host.path("/usr/local/cuda-13.1"), "13.1")
    for directory, dirs, files in os.walk(site):
        for name in dirs + files + [""]:
            os.lchown(os.path.join(directory, name), NOBODY, NOBODY)
    env = {**host.env, "PATH": "%s/bin:%s" % (site, host.env["PATH"])}
    proc = script("bash", ['eval "$(cudaswitch use 13.1 --shell bash --no-verify)"', 'echo "USE=$PATH"',
                           'eval "$(cudaswitch off --shell bash)"', 'echo "OFF=$PATH"'], env)
    lines = dict(line.split("=", 1) for line in proc.stdout.splitlines())
    assert str(site) not in lines["USE"] and lines["OFF"] == env["PATH"], proc.stderr
    assert "other users" not in proc.stderr


def test_a_config_in_the_users_own_group_under_umask_002_is_still_read(host):
    """Ubuntu gives each user a private group and umask 002: a config.toml an editor wrote 0664
    in a 0775 dir (an older cudaswitch made it so) is the user's alone and must still be read."""
    import grp
    import pwd

    me = pwd.getpwuid(os.geteuid())
    group = grp.getgrgid(me.pw_gid)
    if group.gr_name != me.pw_name or set(group.gr_mem) - {me.pw_name}:
        pytest.skip("this user's group is not a private one")
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    config = host.work / "config"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('default = "13.0"\n')
    os.chmod(config, 0o775)
    os.chmod(config / "config.toml", 0o664)
    proc = run(host, "list")
    assert proc.returncode == 0 and "not read" not in proc.stderr, proc.stderr
    assert any(line.startswith(" d ") and "13.0" in line for line in proc.stdout.splitlines()), proc.stdout


def test_a_relative_cudaswitch_dir_never_reads_a_cloned_repositorys_files(host, tmp_path):
    """CUDASWITCH_CONFIG_DIR=.cudaswitch (relative, as XDG_* never may be) named the cwd's: a
    cloned repository's own config.toml, files of the user's own after `git clone`, registered
    its toolkit and `list` ran its nvcc. A relative value is ignored, as XDG's are."""
    kits.install_classic(kits.cuda13("13.0"), host.path("/usr/local/cuda-13.0"), "13.0")
    repo = tmp_path / "repo"
    marker = tmp_path / "ran"
    trap(host.path("/opt/repo-kit/bin"), "nvcc", marker, owner=os.geteuid())
    host.path("/opt/repo-kit/lib64").mkdir()
    (repo / ".cudaswitch").mkdir(parents=True)
    (repo / ".cudaswitch" / "config.toml").write_text('toolkits = ["/opt/repo-kit"]\n')
    env = {"CUDASWITCH_CONFIG_DIR": ".cudaswitch", "HOME": str(tmp_path / "home")}
    proc = subprocess.run([CUDASWITCH, "list"], capture_output=True, text=True, timeout=120, cwd=repo,
                          env={**host.env, **env}, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0 and not marker.exists() and "repo-kit" not in proc.stdout, proc.stdout

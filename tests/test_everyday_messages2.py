"""Messages that said something untrue, each reproduced through the real command first."""

import pytest

from tests.shellrun import INIT, Interactive


def test_current_after_the_hook_refused_the_project_file_does_not_promise_the_next_prompt(standard_host, tmp_path):
    """In a real bash with the hook, `cd` into a project asking for 11.8 (not here): the hook
    refuses it, so `current` must not say "the hook applies it at the next prompt"."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".cudaversion").write_text("11.8\n")
    sh = Interactive("bash", standard_host.env, cwd=str(tmp_path))
    try:
        sh.run(INIT["bash"])
        entered = sh.run("cd %s" % project)
        assert "11.8" in entered and "error" in entered, entered
        shown = sh.run("cudaswitch current") + sh.run("cudaswitch current")  # a later prompt: still refused
    finally:
        sh.close()
    assert "next prompt" not in shown, shown
    assert "asks for 11.8" in shown and "the hook refuses it" in shown, shown


def test_verify_of_an_incomplete_toolkit_does_not_say_it_can_build(standard_host):
    """12.4 is runtime-only (no nvcc): without a driver it can neither build nor run, and the
    driver line must not say it "can build code"."""
    proc = standard_host.run("verify", "12.4")
    line = next(l for l in proc.stdout.splitlines() if "no NVIDIA driver on this host" in l)
    assert "can build code" not in line and "can neither build code" in line, line
    complete = standard_host.run("verify", "13.1").stdout
    assert "can build code but not run it" in complete


def test_which_of_a_missing_tool_in_a_healthy_toolkit_adds_no_status_noise(standard_host):
    proc = standard_host.run("which", "13.1", "nosuch")
    assert proc.returncode == 1 and "ok: ok" not in proc.stderr and "has no nosuch" in proc.stderr
    broken = standard_host.run("which", "12.4", "nvcc")  # an incomplete one still says why
    assert "its status is incomplete: no nvcc" in broken.stderr


@pytest.mark.parametrize("fast", ["", "1"])
def test_an_unknown_option_suggests_a_real_one_never_help(standard_host, fast):
    """click's "(Possible options: --help)" beside "(see ... --help)"; both parsers now say
    "did you mean --list?" and never offer --help."""
    env = {"CUDASWITCH_NO_FAST": fast}
    for args, near in ((["install", "--lst"], "did you mean --list?"), (["list", "--jsn"], "did you mean --json?"),
                       (["doctor", "--hlp"], None)):
        proc = standard_host.run(*args, env=env)
        assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1
        assert "Possible options" not in proc.stderr, proc.stderr
        assert (near in proc.stderr) if near else "did you mean" not in proc.stderr, proc.stderr


def test_explain_quotes_the_matched_text_whole(standard_host):
    proc = standard_host.run("explain", "nvcc fatal   : Unsupported gpu architecture 'compute_30'")
    assert "(matched: \"Unsupported gpu architecture 'compute_30'\")" in proc.stdout, proc.stdout


def test_doctor_does_not_advise_dropping_the_dir_of_the_system_nvcc_wrapper(standard_host, tmp_path):
    """Mirrors a Debian host whose /usr/local/bin/nvcc is a link into /usr/local/cuda-13.0: with 13.1
    first on PATH, doctor warns of two nvcc, but /usr/local/bin (the host's other tools) is not a
    CUDA bin dir to drop from rc files."""
    wrapdir = tmp_path / "local-bin"
    wrapdir.mkdir()
    (wrapdir / "nvcc").symlink_to(standard_host.path("/usr/local/cuda-13.0/bin/nvcc"))
    path = "%s:%s:/usr/bin:/bin" % (standard_host.path("/usr/local/cuda-13.1/bin"), wrapdir)
    proc = standard_host.run("doctor", env={"PATH": path, "CUDA_HOME": str(standard_host.path("/usr/local/cuda-13.1"))})
    lines = proc.stdout.splitlines()
    at = next(i for i, l in enumerate(lines) if "PATH has nvcc from" in l)
    hint = lines[at + 1]
    assert "drop CUDA bin dirs" not in hint and "keep %s on PATH" % wrapdir in hint, hint


def test_one_toolkit_goes_by_its_release_and_nvcc_version_alike(standard_host):
    """NVIDIA's version.json names the 13.1 install's release 13.1.0 while nvcc says 13.1.115 (an
    install of 13.1.2 said "CUDA 13.1.2 (nvcc 13.1.115)", then list showed only 13.1.115): list
    shows both names, and a request by either finds the same toolkit."""
    root = str(standard_host.path("/usr/local/cuda-13.1"))
    nvcc = standard_host.list_json()[root]["version"]
    row = next(l for l in standard_host.run("list", check=True).stdout.splitlines() if l.endswith(root))
    assert "13.1.0 (nvcc %s)" % nvcc in row, row
    for request in ("13.1.0", nvcc):
        assert standard_host.run("which", request, check=True).stdout.strip() == root

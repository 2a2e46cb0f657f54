"""What a refusal of a project file may quote: a short escaped prefix, and nothing of a file reached
through a link that leaves the project. CI logs keep stderr: a `.cudaversion` (or `.tool-versions`,
or pyproject.toml) linked to ~/.git-credentials must not put a token there."""

import os

import pytest

TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"


@pytest.mark.parametrize("name, wrap", [
    (".cudaversion", "{}"),
    (".tool-versions", "cuda {}"),
])
def test_a_link_out_of_the_project_is_refused_without_its_content(standard_host, tmp_path, name, wrap):
    secret = tmp_path / "home" / ".git-credentials"
    secret.parent.mkdir()
    secret.write_text(wrap.format("https://me:%s@github.com" % TOKEN) + "\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    os.symlink(str(secret), repo / name)
    proc = standard_host.run("hook-env", "--shell", "bash", cwd=repo)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and name in proc.stderr
    assert "ghp_" not in proc.stderr and "github" not in proc.stderr and "me:" not in proc.stderr


def test_a_long_bad_request_is_quoted_as_a_short_escaped_prefix(standard_host, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".cudaversion").write_text("13.0-" + "é" * 1500 + "\n")
    proc = standard_host.run("hook-env", "--shell", "bash", cwd=repo)
    assert proc.returncode == 1 and proc.stdout == ""
    quoted = proc.stderr.split("refusing ", 1)[1]
    assert "'13.0-\\xe9\\xe9" in quoted and "..." in quoted
    assert len(proc.stderr) < len(str(repo)) + 200


def test_a_link_inside_the_project_is_followed(standard_host, tmp_path):
    """A monorepo's `svc/.cudaversion -> ../shared.txt` is data like any other: it selects."""
    repo = tmp_path / "repo"
    (repo / "svc").mkdir(parents=True)
    (repo / "shared.txt").write_text("13.1\n")
    os.symlink("../shared.txt", repo / "svc" / ".cudaversion")
    proc = standard_host.run("hook-env", "--shell", "bash", cwd=repo / "svc")
    assert proc.returncode == 0 and str(standard_host.path("/usr/local/cuda-13.1")) in proc.stdout

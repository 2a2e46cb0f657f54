"""Helpers shared by the install tests: where a test host's managed toolkits live, what `list`
says of them, and the clean-up that keeps a test run's disk use small."""

import shutil

import pytest


@pytest.fixture(autouse=True)
def drop_installed_trees(tmp_path):
    """Toolkits are ~270 MB each; pytest keeps old tmp dirs, so each test removes its own.
    Imported by each install test module, which makes it autouse there."""
    yield
    shutil.rmtree(tmp_path / "work" / "data", ignore_errors=True)


def toolkits_dir(host):
    return host.work / "data" / "toolkits"


def managed_items(host):
    """`list --json` items whose sources include managed."""
    return [item for item in host.list_json().values() if "managed" in item["sources"]]

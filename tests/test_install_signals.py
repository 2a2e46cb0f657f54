"""Ctrl-C or SIGTERM at random points of a real `install` (NVIDIA's 13.0 wheels, through pip as
users run it): asking pip, downloading, unpacking, checking, renaming into place. Ten runs with a
seeded random delay each; after every one no partial toolkit is listed, nothing left behind blocks
the next install (its lock is free, its build dir is gone or ignored), and a last retry succeeds."""

import random
import signal
import subprocess
import time

from tests.conftest import CUDASWITCH
from tests.install_support import drop_installed_trees, managed_items  # noqa: F401 (autouse fixture)

RUNS = 10


def test_signals_at_random_points_never_leave_a_partial_toolkit(host):
    started = time.monotonic()
    first = host.run("install", "13.0", timeout=600)
    duration = time.monotonic() - started
    assert first.returncode == 0, first.stderr
    assert host.run("uninstall", "13.0", timeout=120).returncode == 0
    rng = random.Random(7)
    outcomes = []
    for run in range(RUNS):
        signum = (signal.SIGINT, signal.SIGTERM)[run % 2]
        delay = rng.uniform(0.05, duration)
        proc = subprocess.Popen([CUDASWITCH, "install", "13.0"], env=host.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
        assert "Traceback" not in err, err
        items = managed_items(host)
        outcomes.append((signum.name, round(delay, 2), proc.returncode))
        if proc.returncode == 0:  # it finished before the signal came: a whole toolkit
            assert [i["status"] for i in items] == ["ok"], items
            assert host.run("uninstall", "13.0", timeout=120).returncode == 0
        else:
            assert proc.returncode in (130, 143, -signum), (outcomes, err)
            assert items == [], (outcomes, items)
    retry = host.run("install", "13.0", timeout=600)
    assert retry.returncode == 0, (outcomes, retry.stderr)
    assert "waiting for another cudaswitch" not in retry.stderr  # no stale lock held it up
    [item] = managed_items(host)
    assert item["status"] == "ok" and item["short"] == "13.0", outcomes

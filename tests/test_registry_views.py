"""View directories under concurrency: two shells running `list --refresh` while a third runs nvcc
through the view (the real case: a login script refreshing on several terminals at once). Driven
through views.build in separate processes, because a race through whole CLI runs is too rare to
catch in a test; each builder flips the view between two conda envs' tools so every call rebuilds."""

import multiprocessing
import os

from cudaswitch.registry import views


def _conda_env(base, name):
    for sub, entry in (("bin", "nvcc"), ("bin", "python3"), ("lib", "libcudart.so.13")):
        os.makedirs(os.path.join(base, name, sub), exist_ok=True)
        open(os.path.join(base, name, sub, entry), "w").close()
    return os.path.join(base, name)


def _build_many(args):
    base, worker = args
    failures = []
    for n in range(25):
        env = os.path.join(base, "env-a" if (worker + n) % 2 else "env-b")
        record = {"real": os.path.join(base, "the-env"), "bin_dirs": [env + "/bin"], "lib_dirs": [env + "/lib"]}
        try:
            view_bin, _ = views.build(os.path.join(base, "cache"), record)
            if not os.path.exists(os.path.join(view_bin, "nvcc")):
                failures.append("no nvcc in the view just built")
        except OSError as exc:
            failures.append(repr(exc))
    return failures


def test_racing_view_builders_never_fail_and_readers_always_see_a_whole_view(tmp_path):
    base = str(tmp_path)
    _conda_env(base, "env-a"), _conda_env(base, "env-b")
    with multiprocessing.get_context("fork").Pool(6) as pool:
        failures = sum(pool.map(_build_many, [(base, w) for w in range(6)]), [])
    assert failures == []
    view = views.view_dir(os.path.join(base, "cache"), os.path.join(base, "the-env"))
    assert sorted(os.listdir(view)) == ["bin", "lib"] and os.listdir(view + "/bin") == ["nvcc"]

"""Timing primitives: spawn a command with the least overhead Python allows, run two things
alternately (A B A B ...) so drift (thermal, page cache, a neighbour process) hits both sides alike,
and summarise samples as median and spread."""

import os
import statistics
import time


class CommandFailed(RuntimeError):
    pass


def spawn_seconds(argv, env, cwd):
    """Wall time of one run of argv (stdio on /dev/null), from spawn to reaped exit.

    posix_spawn (vfork underneath) keeps the parent's share of the figure to ~0.1 ms; both sides of a
    pair pay it. posix_spawn has no cwd argument in 3.11, so the parent changes directory first."""
    os.chdir(cwd)
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise CommandFailed("%s exited %d" % (" ".join(argv), os.waitstatus_to_exitcode(status)))
    return elapsed


def command_runner(argv, env, cwd):
    return lambda: spawn_seconds(argv, env, cwd)


def alternate(run_a, run_b, rounds, warmup=3):
    """Samples (seconds) of A and B, taken A B A B ...; the first `warmup` rounds are discarded."""
    samples_a, samples_b = [], []
    for index in range(warmup + rounds):
        a, b = run_a(), run_b()
        if index >= warmup:
            samples_a.append(a)
            samples_b.append(b)
    return samples_a, samples_b


def summary(samples):
    """Milliseconds: median, quartiles, min, max and n of a list of seconds."""
    ms = sorted(s * 1000.0 for s in samples)
    quartiles = statistics.quantiles(ms, n=4) if len(ms) >= 2 else [ms[0], ms[0], ms[0]]
    return {"median_ms": statistics.median(ms), "p25_ms": quartiles[0], "p75_ms": quartiles[2],
            "min_ms": ms[0], "max_ms": ms[-1], "n": len(ms)}

"""python -m bench.hook_bigfile: what one prompt costs in bash, zsh and fish when the project file
is unchanged and 50 MiB (a .cudaversion and a pyproject.toml, sparse). The hook reads at most
4 KiB (zsh: nothing while size, mtime and inode hold), so this should stay near the small-file
cost. Prints the median ms per __cudaswitch_hook call over batches; no budget is asserted here."""

import os
import statistics
import subprocess
import sys
import tempfile

BATCH = 200
LOOP = {
    "bash": ('eval "$(%s init bash)"; cd "$1"; __cudaswitch_hook 2>/dev/null; for r in 1 2 3 4 5; do '
             's=$EPOCHREALTIME; for ((i=0;i<%d;i++)); do __cudaswitch_hook; done; e=$EPOCHREALTIME; '
             'echo "$s $e"; done'),
    "zsh": ('zmodload zsh/datetime; eval "$(%s init zsh)"; cd "$1"; __cudaswitch_hook 2>/dev/null; '
            'for r in 1 2 3 4 5; do s=$EPOCHREALTIME; for ((i=0;i<%d;i++)); do __cudaswitch_hook; done; '
            'e=$EPOCHREALTIME; echo "$s $e"; done'),
    "fish": ('%s init fish | source; cd $argv[1]; __cudaswitch_hook 2>/dev/null; for r in (seq 5); '
             'set s (date +%%s.%%N); for i in (seq %d); __cudaswitch_hook; end; set e (date +%%s.%%N); '
             'echo "$s $e"; end'),
}
ARGV = {"bash": ["bash", "--norc", "--noprofile", "-c"], "zsh": ["zsh", "-f", "-c"],
        "fish": ["fish", "--no-config", "-c"]}


def per_call_ms(shell, program, project):
    script = LOOP[shell] % (program, BATCH)
    argv = ARGV[shell] + [script] + ([project] if shell == "fish" else ["bench", project])  # $0 for sh
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600).stdout.split("\n")
    samples = [(float(e) - float(s)) * 1000 / BATCH for s, e in (line.split() for line in out if line.strip())]
    return statistics.median(samples)


def main():
    program = sys.argv[1] if len(sys.argv) > 1 else "cudaswitch"
    with tempfile.TemporaryDirectory() as work:
        for name, head in ((".cudaversion", b"13.0\n"), ("pyproject.toml", b"[tool.cudaswitch]\ncuda = '13.0'\n"),
                           ("small/.cudaversion", b"13.0\n")):
            project = os.path.join(work, name.replace("/", "_") + "-dir")
            os.makedirs(project)
            with open(os.path.join(project, os.path.basename(name)), "wb") as handle:
                handle.write(head)
                if not name.startswith("small"):
                    handle.truncate(50 << 20)
            size = "50 MiB" if not name.startswith("small") else "5 B"
            print("%-20s %-7s " % (os.path.basename(name), size) + "  ".join(
                "%s %.3f ms" % (shell, per_call_ms(shell, program, project)) for shell in ("bash", "zsh", "fish")))


if __name__ == "__main__":
    main()

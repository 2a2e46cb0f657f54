#!/usr/bin/env bash
# cudaswitch's verdicts against a real NVIDIA GPU, driver and CUDA torch. No network needed.
#
#   bash tests/gpu/check.sh --prepare     # once, on a machine with PyPI: wheels into tests/gpu/wheels
#                                         # (GPU_PYTHON=3.11 for a GPU machine whose python3 is 3.11)
#   bash tests/gpu/check.sh [--out DIR]   # on the GPU machine, from the repository root
#   bash tests/gpu/check.sh --force       # the same without a GPU: tries the script itself
#
# tests/gpu/wheels/ is not committed (git ignores it): a copy of the working tree sent to a GPU
# machine must take it along, and `--out DIR` puts the results where that machine hands files back.
#
# It installs cudaswitch from this working tree into a venv that sees the machine's packages
# (--system-site-packages: its torch, typer, packaging), taking what is missing from
# tests/gpu/wheels, then records as JSON in one results directory (default
# bench/out/gpu/HOST-DATE): list, doctor, `verify ROOT --compile` of every toolkit (with
# python3's torch), `torch` when that command exists, `explain` of two messages, and each
# driver source's own answer (tests/gpu/facts.py). tests/gpu/expect.py then states what must
# hold on this machine and writes verdicts.json. Exit: 0 every expectation holds, 1 a verdict is
# wrong, 2 no GPU (or bad usage), 3 nothing wrong but something could not be checked.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
wheels="$here/wheels"
step_timeout=300
budget_s=540  # stop starting new toolkit checks after this: the whole run stays under 10 minutes

out="" force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prepare)
      # with their dependencies, for the GPU machine's Python (GPU_PYTHON, default 3.12): its python3
      # may be a venv whose packages a --system-site-packages venv does not see (typer among them)
      mkdir -p "$wheels"
      exec python3 -m pip download -q --dest "$wheels" --only-binary=:all: --implementation cp \
        --python-version "${GPU_PYTHON:-3.12}" --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 platformdirs tomli-w setuptools wheel typer packaging ;;
    --out) [ $# -ge 2 ] || { echo "check.sh: --out needs a directory" >&2; exit 2; }; out=$2; shift ;;
    --force) force=1 ;;
    *) echo "check.sh: unknown argument $1 (use --prepare, --out DIR or --force)" >&2; exit 2 ;;
  esac
  shift
done

gpu_present() {
  [ -e /proc/driver/nvidia/version ] || [ -e /dev/nvidia0 ] || \
    { command -v nvidia-smi >/dev/null 2>&1 && timeout 60 nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }
}
if [ "$force" = 0 ] && ! gpu_present; then
  echo "check.sh: no NVIDIA GPU found (no /proc/driver/nvidia/version, no /dev/nvidia0, no GPU from nvidia-smi -L)" >&2
  exit 2
fi

start=$SECONDS
out=${out:-"$repo/bench/out/gpu/$(hostname -s)-$(date -u +%Y%m%dT%H%MZ)"}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=$(command -v python3) || { echo "check.sh: no python3 on PATH" >&2; exit 2; }
echo "results: $out"

# steps.tsv: name, exit status, seconds, command (what ran, for the record)
step() {  # step NAME FILE CMD...: stdout to FILE (JSON), stderr to NAME.err
  local name=$1 file=$2 began=$SECONDS rc
  shift 2
  timeout "$step_timeout" "$@" >"$out/$file" 2>"$out/$name.err"
  rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - began))" "$*" >>"$out/steps.tsv"
  [ -s "$out/$name.err" ] || rm -f "$out/$name.err"
  return 0
}
: >"$out/steps.tsv"

{
  echo "host: $(hostname)"; echo "date: $(date -u +%FT%TZ)"; echo "kernel: $(uname -r)"
  echo "python3: $py ($("$py" --version 2>&1))"
  echo "commit: $(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown) $(git -C "$repo" status --porcelain 2>/dev/null | wc -l) changed files"
  (timeout 60 nvidia-smi -L 2>&1 || true)
} >"$out/machine.txt"

# cudaswitch from this working tree, beside the machine's own packages
venv="$work/venv"
if ! "$py" -m venv --system-site-packages "$venv" >"$out/install.log" 2>&1; then
  echo "check.sh: cannot create a venv with $py (see $out/install.log)" >&2; exit 2
fi
find_links=()
[ -d "$wheels" ] && find_links=(--find-links "$wheels")
if ! "$venv/bin/python" -m pip install --no-index "${find_links[@]}" "$repo" >>"$out/install.log" 2>&1; then
  echo "check.sh: cannot install cudaswitch offline (see $out/install.log; run --prepare where PyPI is reachable)" >&2
  exit 2
fi
cs="$venv/bin/cudaswitch"
export CUDASWITCH_CACHE_DIR="$work/cache" CUDASWITCH_CONFIG_DIR="$work/config" CUDASWITCH_DATA_DIR="$work/data"

step drivers drivers.json "$py" "$here/facts.py" drivers
step torch-facts torch-facts.json "$py" "$here/facts.py" torch "$py"
step list list.json "$cs" list --json --refresh
step doctor doctor.json "$cs" doctor --json --python "$py"
n=0
while IFS= read -r root; do
  [ -n "$root" ] || continue
  n=$((n + 1))
  if [ $((SECONDS - start)) -gt "$budget_s" ]; then
    printf 'verify-%02d\tskipped\t0\tout of time: %s\n' "$n" "$root" >>"$out/steps.tsv"
    continue
  fi
  step "verify-$(printf %02d $n)" "verify-$(printf %02d $n).json" "$cs" verify "$root" --compile --json --python "$py"
done < <("$venv/bin/python" -c 'import json, sys; [print(t["root"]) for t in json.load(open(sys.argv[1]))]' "$out/list.json" 2>/dev/null)
if "$cs" torch --help >/dev/null 2>&1; then
  step torch torch.json "$cs" torch --json
fi
step explain-no-kernel-image explain-no-kernel-image.json "$cs" explain --json --python "$py" \
  "CUDA error: no kernel image is available for execution on the device"
step explain-driver-insufficient explain-driver-insufficient.json "$cs" explain --json --python "$py" \
  "CUDA driver version is insufficient for CUDA runtime version"

"$py" "$here/expect.py" "$out" | tee "$out/verdicts.txt"
status=${PIPESTATUS[0]}
echo "done in $((SECONDS - start)) s; exit $status (0 all hold, 1 a verdict is wrong, 3 something could not be checked)"
exit "$status"

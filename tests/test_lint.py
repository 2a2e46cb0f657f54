"""ruff, with the rule set pyproject.toml declares (and says why), over the package, its tests and
its benchmarks: part of the test command, so CI runs it on every change."""

import importlib.util
import subprocess
import sys
from pathlib import Path

from tests import kits

TOP = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    if importlib.util.find_spec("ruff") is None:
        kits._give_up("ruff is not installed: pip install -e '.[test]'")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise",
                           "cudaswitch", "tests", "bench"], capture_output=True, text=True, cwd=TOP, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_every_slow_module_exists():
    """tests/tiers.py names modules that exist: a renamed test file must not fall into the fast tier
    silently."""
    from pathlib import Path

    from tests.tiers import SLOW_MODULES

    here = {p.stem for p in Path(__file__).parent.glob("test_*.py")}
    assert SLOW_MODULES <= here, sorted(SLOW_MODULES - here)

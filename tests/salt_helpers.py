"""Runs a command-line script in two processes whose string-hash salts differ."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def folders_under_two_salts(tmp_path: Path, code: str, *args: str) -> tuple[Path, Path]:
    """Runs ``code`` (``python -c``; argv: its own folder, then ``args``) under
    PYTHONHASHSEED 1 and 2, each writing into a folder of its own, and returns the two
    folders. ``code`` prints ``hash('salt')`` on its first line, which proves that the two
    processes really did hash strings differently."""
    salts = []
    for hash_seed in ("1", "2"):
        folder = tmp_path / hash_seed
        folder.mkdir()
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", code, str(folder), *args],
                              capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        salts.append(done.stdout.split("\n")[0])
    assert salts[0] != salts[1]
    return tmp_path / "1", tmp_path / "2"

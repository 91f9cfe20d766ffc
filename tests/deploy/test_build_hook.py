"""`pip install` without a C compiler: the build hook (hatch_build.py) must not fail the install.

The hook compiles the C walk of parsed trees; a machine without a compiler (a slim image, a laptop
without build tools) still gets a working forgebot whose index runs tree-sitter's queries.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.tools import need

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_wheel_builds_without_a_compiler_and_leaves_the_walk_out(tmp_path: Path) -> None:
    need(shutil.which("git") is not None, "git")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    source = tmp_path / "source"
    for name in tracked.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    assert not list(source.rglob("_treewalk*.so"))
    env = {**os.environ, "CC": "/bin/false"}
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(tmp_path / "out"),
                           str(source)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "project.index._treewalk not built" in done.stdout + done.stderr
    wheels = list((tmp_path / "out").glob("forgebot-*.whl"))
    assert [wheel.name.endswith("-py3-none-any.whl") for wheel in wheels] == [True]
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = wheel.namelist()
    assert "project/index/treewalk.py" in names and not any("_treewalk" in n and n.endswith(".so") for n in names)

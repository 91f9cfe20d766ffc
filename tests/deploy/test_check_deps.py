"""scripts/check_deps.py, run by scripts/check: an import the package does not declare fails the check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_deps.py"


def _project(tmp_path: Path, source: str, dependencies: str = '"requests>=2"', extras: str = "") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "p"\ndependencies = [{dependencies}]\n'
        f"[project.optional-dependencies]\n{extras}\n"
        '[tool.hatch.build.targets.wheel]\npackages = ["app"]\n')
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "mod.py").write_text(source)
    return tmp_path


def _run(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, timeout=60)


def test_the_product_declares_what_it_imports() -> None:
    result = _run(ROOT)
    assert result.returncode == 0, result.stdout


def test_an_undeclared_import_fails(tmp_path: Path) -> None:
    # yaml is installed (pyyaml) but this project declares only requests
    root = _project(tmp_path, "import json\nimport requests\nfrom app import mod\nimport yaml\n")
    result = _run(root)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "app/mod.py:4: `yaml` comes from pyyaml, declared nowhere; add it to [project] dependencies"]


def test_a_private_module_of_a_library_fails(tmp_path: Path) -> None:
    root = _project(tmp_path, "from requests._internal_utils import to_native_string\n")
    result = _run(root)
    assert result.returncode == 1 and "private module" in result.stdout


def test_an_extra_only_behind_an_import_error_guard(tmp_path: Path) -> None:
    guarded = "try:\n    import yaml\nexcept ImportError:\n    yaml = None\n"
    assert _run(_project(tmp_path / "a", guarded, extras='yaml = ["pyyaml"]')).returncode == 0
    bare = _run(_project(tmp_path / "b", "import yaml\n", extras='yaml = ["pyyaml"]'))
    assert bare.returncode == 1 and "declared an extra" in bare.stdout

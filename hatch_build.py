"""Build hook: compiles `project/index/treewalk.c` into `project.index._treewalk`, or leaves it out.

Why a hook and not a plain extension: the module reads py-tree-sitter's node objects through the
binding's own struct layout and walks trees with tree-sitter's C runtime, neither of which the
`tree-sitter` wheel exports (its symbols are hidden). So it is compiled against the source
distribution of exactly the release `pyproject.toml` pins, fetched by pip from the configured index
at build time (never committed, never fetched at run time), and stamps that release into the module.

Nothing here can fail an install: without a C compiler, Python headers or the index, the build goes
on without the module and the index falls back to tree-sitter's query cursor (the same rows, about
0.6 s slower per 4,500 PHP files). `FORGEBOT_NO_TREEWALK=1` skips it on purpose.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("project/index/treewalk.c")


class TreeWalkHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or os.environ.get("FORGEBOT_NO_TREEWALK"):
            return
        try:
            built = build(Path(self.root))
        except Exception as error:  # whatever went wrong, the install goes on without the module
            self.app.display_warning(f"project.index._treewalk not built ({error}); the index uses the query cursor")
            return
        if version != "editable":  # an editable install imports it from the checkout, where it was written
            build_data["force_include"][str(built)] = built.relative_to(self.root).as_posix()
            build_data["pure_python"] = False
            build_data["infer_tag"] = True


def pinned_release(root: Path) -> str:
    """The tree-sitter release `pyproject.toml` pins (`tree-sitter==X`)."""
    with open(root / "pyproject.toml", "rb") as file:
        dependencies = tomllib.load(file)["project"]["dependencies"]
    for requirement in dependencies:
        found = re.fullmatch(r"tree-sitter==([0-9][0-9A-Za-z.]*)", requirement.replace(" ", ""))
        if found:
            return found.group(1)
    raise ValueError("pyproject.toml pins no tree-sitter release (tree-sitter==X)")


def build(root: Path) -> Path:
    """Compile the module next to its source unless the one there was built from the same inputs."""
    release = pinned_release(root)
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = root / SOURCE.with_name("_treewalk" + suffix)
    stamp = target.with_suffix(target.suffix + ".stamp")
    key = hashlib.sha256((root / SOURCE).read_bytes() + f"\0{release}\0{suffix}".encode()).hexdigest()
    if target.exists() and stamp.exists() and stamp.read_text() == key:
        return target
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                        "--disable-pip-version-check", f"tree-sitter=={release}", "-d", tmp],
                       check=True, timeout=600)
        archive = next(Path(tmp).glob("tree_sitter-*.tar.gz"))
        with tarfile.open(archive) as sdist:
            for member in sdist.getmembers():  # the archive is read as untrusted: plain files inside tmp only
                if not (member.isfile() or member.isdir()) or member.name.startswith("/") or ".." in member.name:
                    raise ValueError(f"unexpected member in {archive.name}: {member.name}")
            sdist.extractall(tmp)
        package = Path(tmp) / f"tree_sitter-{release}" / "tree_sitter"
        partial = target.with_name(target.name + ".partial")
        compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
        subprocess.run([
            *compiler, "-O2", "-shared", "-fPIC", "-std=gnu11", "-fvisibility=hidden",
            f'-DTREE_SITTER_VERSION="{release}"',
            f"-I{package / 'binding'}", f"-I{package / 'core/lib/include'}", f"-I{package / 'core/lib/src'}",
            f"-I{sysconfig.get_paths()['include']}",
            str(root / SOURCE), str(package / "core/lib/src/lib.c"), "-o", str(partial),
        ], check=True, timeout=600)
        os.replace(partial, target)  # a failed compile leaves no module; a stale .partial is overwritten
    stamp.write_text(key)
    return target

"""The profile of a repository whose `.forgebot.yml` names none, read from its files at one commit.

Real git repositories throughout: the rules (a top-level manifest claims, evidence decides between
profiles sharing a manifest, source counts decide between languages, ties go to the first name), an
explicit `profile:` winning, the base commit's files counting rather than a change's, and hostile
manifests and trees that must neither hang nor crash the worker.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from project.profiles import detect as detection
from project.profiles import load_profile
from project.profiles.detect import MAX_MANIFEST_BYTES, Tree, choose, dependencies, detect_profile
from project.repoconfig import load_repo_config
from tests.graph.conftest import git, init_repo

COMMIT = ["-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-m"]


def _repo(root: Path, files: dict[str, str | bytes]) -> Path:
    root.mkdir(parents=True)
    (root / "README.md").write_text("fixture\n")
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return init_repo(root)


def _detect(tmp_path: Path, files: dict[str, str | bytes]) -> tuple[str | None, str]:
    choice = detect_profile(_repo(tmp_path / "repo", files), "main")
    assert choice.detected
    return choice.name, choice.reason


@pytest.mark.parametrize(("manifest", "profile"), [
    ("composer.json", "php"), ("pyproject.toml", "python"), ("setup.cfg", "python"), ("setup.py", "python"),
    ("package.json", "javascript"),
])
def test_one_top_level_manifest_names_the_profile(tmp_path: Path, manifest: str, profile: str) -> None:
    assert _detect(tmp_path, {manifest: "{}\n"}) == (profile, f"{manifest} at the top level")


@pytest.mark.parametrize(("evidence", "why"), [
    ({"tsconfig.json": "{}"}, "with tsconfig.json"),
    ({"package.json": json.dumps({"devDependencies": {"typescript": "^5.4.0"}})}, "depending on typescript"),
    ({"src/app.ts": "export const a = 1;\n", "src/b.tsx": "export {};\n"}, "with 2 typescript source file(s)"),
])
def test_a_package_is_typescript_when_something_besides_package_json_says_so(
    tmp_path: Path, evidence: dict[str, str], why: str
) -> None:
    files: dict[str, str | bytes] = {"package.json": '{"name": "app"}', "lib/a.js": "module.exports = 1;\n"}
    files.update(evidence)
    assert _detect(tmp_path, files) == ("typescript", f"package.json at the top level, {why}")


def test_a_package_with_only_javascript_and_a_typescript_dependency_elsewhere_is_javascript(tmp_path: Path) -> None:
    """`typescript` as a key outside the dependency tables (a script's name) is no evidence, and neither
    are the type declarations a JavaScript package ships."""
    package = json.dumps({"scripts": {"typescript": "echo"}, "dependencies": {"left-pad": "1"}})
    files: dict[str, str | bytes] = {"package.json": package, "index.js": "1;\n", "index.d.ts": "export {};\n",
                                     "types/extra.d.mts": "export {};\n"}
    assert _detect(tmp_path, files) == ("javascript", "package.json at the top level")


def test_several_languages_are_decided_by_their_source_files(tmp_path: Path) -> None:
    php_app = {"composer.json": "{}", "package.json": "{}", "tsconfig.json": "{}",
               **{f"src/C{i}.php": "<?php\n" for i in range(3)}, "assets/app.ts": "export {};\n"}
    name, reason = _detect(tmp_path / "a", php_app)
    assert name == "php"
    assert reason == ("several manifests at the top level: composer.json (php), package.json (typescript); "
                      "most source files (php 3, typescript 1)")
    front_end = {**php_app, **{f"web/m{i}.ts": "export {};\n" for i in range(4)}}
    assert _detect(tmp_path / "b", front_end)[0] == "typescript"


def test_a_tie_goes_to_the_first_name(tmp_path: Path) -> None:
    name, reason = _detect(tmp_path, {"composer.json": "{}", "pyproject.toml": "", "a.php": "<?php\n", "a.py": ""})
    assert (name, reason) == ("php", "several manifests at the top level: composer.json (php), pyproject.toml "
                                     "(python); most source files (php 1, python 1)")


def test_without_a_top_level_manifest_the_most_source_files_win(tmp_path: Path) -> None:
    """A monorepo's manifests one level down claim nothing: the checks run at the top."""
    files: dict[str, str | bytes] = {"backend/pyproject.toml": "", "backend/app/main.py": "", "backend/app/db.py": "",
                                     "web/package.json": "{}", "web/index.js": "1;\n"}
    assert _detect(tmp_path, files) == (
        "python", "no manifest at the top level; most source files (javascript 1, php 0, python 2, typescript 0)")


def test_nothing_known_is_no_profile_with_what_was_looked_for(tmp_path: Path) -> None:
    name, reason = _detect(tmp_path, {"main.go": "package main\n", "go.mod": "module x\n"})
    assert name is None
    assert reason == ("nothing matched: no composer.json, package.json, pyproject.toml, setup.cfg or setup.py at "
                      "the top level and no source file of a known language; name one with `profile:` in "
                      "`.forgebot.yml` (known: javascript, php, python, typescript)")


def test_a_named_profile_wins_over_the_files(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", {".forgebot.yml": "profile: php\n", "pyproject.toml": "", "a.py": ""})
    config = load_repo_config(repo, "main")
    choice = config.profile_choice()
    assert (choice.name, choice.detected, choice.reason) == ("php", False, "named in `.forgebot.yml`")
    assert config.resolve_profile().name == "php" and choice.describe() == "`php` (set: named in `.forgebot.yml`)"


def test_the_files_of_the_revision_read_count_not_a_later_change(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", {"composer.json": "{}"})
    git(repo, "checkout", "-q", "-b", "change")
    git(repo, "rm", "-q", "composer.json")
    (repo / "pyproject.toml").write_text("")
    git(repo, "add", "-A")
    git(repo, *COMMIT, "to python")
    assert load_repo_config(repo, "main").resolve_profile().name == "php"
    assert load_repo_config(repo, "change").resolve_profile().name == "python"
    assert detect_profile(repo, "nowhere").name is None
    assert detect_profile(repo, "--output=x").reason == "revision `--output=x` not found in the repository"


def test_a_manifest_that_is_a_link_or_a_directory_claims_nothing(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "real.json").write_text("{}")
    (repo / "composer.json").symlink_to("real.json")
    (repo / "package.json").mkdir()
    (repo / "package.json" / "x.txt").write_text("x")
    (repo / "a.py").write_text("")
    init_repo(repo)
    assert detect_profile(repo, "main").name == "python"


@pytest.mark.timeout(60)  # a hang fails here; the bounds, not a speed figure, are what is checked
def test_hostile_manifests_are_bounded_and_decide_nothing(tmp_path: Path) -> None:
    """A package.json too large to read, nested past the parser's depth, or not an object: no dependency
    evidence, no crash, no hang."""
    deep = b"[" * 200_000 + b"]" * 200_000  # 400 KB: read, but nested far past any parser's depth
    assert len(deep) <= MAX_MANIFEST_BYTES and dependencies(deep) == set()
    assert dependencies(b'"typescript"') == set() and dependencies(b"\xff\xfe{") == set()
    huge = b'{"devDependencies": {"typescript": "5"}, "pad": "' + b"x" * MAX_MANIFEST_BYTES + b'"}'
    assert dependencies(huge) == set()  # past the size bound: not even parsed
    for index, package in enumerate([deep, huge, b"[1, 2, 3]"]):
        assert _detect(tmp_path / str(index), {"package.json": package, "a.js": ""}) == (
            "javascript", "package.json at the top level")


def test_a_tree_too_large_to_list_is_decided_without_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(detection, "MAX_TREE_LISTING", 64)
    monkeypatch.setattr(detection, "_cache", type(detection._cache)())
    files: dict[str, str | bytes] = {f"pkg/module_{i}.py": "" for i in range(20)}
    assert _detect(tmp_path / "a", {**files, "pyproject.toml": ""}) == ("python", "pyproject.toml at the top level")
    name, reason = _detect(tmp_path / "b", files)
    assert name is None and reason.startswith("no manifest at the top level and the tree is too large to count")
    name, reason = _detect(tmp_path / "c", {**files, "composer.json": "{}", "setup.py": ""})
    assert name == "php" and "too large to count source files, so the first by name" in reason


def test_the_rules_are_the_profiles_data() -> None:
    """`choose` over a tree given as data: a profile's `[detect]` table is all it reads of a language."""
    profiles = [load_profile(n) for n in ("javascript", "typescript")]
    tree = Tree(top={"package.json": ("0" * 40, 2)}, paths=("package.json", "x.mts"), blobs={})
    assert choose(profiles, tree).name == "typescript"
    assert choose(profiles, Tree(top=tree.top, paths=("package.json", "x.mjs"), blobs={})).name == "javascript"
    assert choose([], tree).name is None

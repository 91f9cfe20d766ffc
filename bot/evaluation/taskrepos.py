"""Task workspaces: a git repository per task built from an installed Debian PHP package.

The package's files under `/usr/share/php` are copied at run time (third-party code never lives in
this repository), the setup change is applied, and a baseline is committed. For review tasks the
unchanged package is committed on `main` and the setup change on branch `change`, checked out: the
code under review exists in git, as the review route requires.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import tree_sitter
import tree_sitter_php

from bot.evaluation.external import CommandError, run_command
from bot.evaluation.taskset import Edit, RemoveBody, Replace, Task
from foundation import gitrunner
from foundation.gitrunner import GitError, Repo

PHP_ROOT = Path("/usr/share/php")
BASE_BRANCH = "main"
CHANGE_BRANCH = "change"
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "forgebot-eval",
    "GIT_AUTHOR_EMAIL": "eval@forgebot.invalid",
    "GIT_COMMITTER_NAME": "forgebot-eval",
    "GIT_COMMITTER_EMAIL": "eval@forgebot.invalid",
    # fixed dates: the same task set builds the same baseline commit ids
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}


class WorkspaceError(RuntimeError):
    """The task cannot be set up here: package missing, other version, or an edit that does not apply."""


@dataclass(frozen=True)
class EditSpan:
    """Where an applied edit sits in the edited file (1-based, inclusive)."""

    file: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Workspace:
    root: Path
    start_commit: str  # the commit the bot starts from (setup applied)
    base_commit: str  # review: the target branch's commit; otherwise the same as start_commit
    edits: tuple[EditSpan, ...]


def installed_version(package: str) -> str | None:
    """The installed version of a Debian package, or None when it is not installed."""
    try:
        done = run_command(["dpkg-query", "-W", "-f=${Status}\t${Version}", package], check=False)
    except CommandError:
        return None
    status, _, version = done.stdout.partition("\t")
    return version if done.returncode == 0 and status.endswith(" installed") else None


def package_files(package: str, php_root: Path = PHP_ROOT) -> list[Path]:
    """Files the package installed under `php_root`, relative to it (symlinked files are copied as files)."""
    listing = run_command(["dpkg-query", "-L", package]).stdout.splitlines()
    files = []
    for line in listing:
        path = Path(line)
        if path.is_relative_to(php_root) and path.is_file():
            files.append(path.relative_to(php_root))
    if not files:
        raise WorkspaceError(f"{package} installs no files under {php_root}")
    return sorted(files)


def check_package(task: Task) -> None:
    version = installed_version(task.package)
    if version is None:
        raise WorkspaceError(f"{task.package} is not installed (apt-get install {task.package})")
    if version != task.version:
        raise WorkspaceError(f"{task.package} {version} is installed; task {task.id} was written for {task.version}")


def build_workspace(task: Task, dest: Path, php_root: Path = PHP_ROOT) -> Workspace:
    """Copy the package into `dest`, commit, apply the setup change, commit; return the commits."""
    check_package(task)
    if dest.exists() and any(dest.iterdir()):
        raise WorkspaceError(f"{dest} is not empty")
    dest.mkdir(parents=True, exist_ok=True)
    for rel in package_files(task.package, php_root):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(php_root / rel, target)
    if gitrunner.run(["init", "-q", "-b", BASE_BRANCH, str(dest)], None).returncode != 0:
        raise CommandError(f"git init failed in {dest}")
    if task.mode == "review":
        base = _commit(dest, f"{task.package} {task.version} as installed")
        _git(dest, "checkout", "-q", "-b", CHANGE_BRANCH)
        spans = tuple(apply_edit(dest, edit) for edit in task.setup)
        start = _commit(dest, f"change under review ({task.id})")
        return Workspace(root=dest, start_commit=start, base_commit=base, edits=spans)
    spans = tuple(apply_edit(dest, edit) for edit in task.setup)
    start = _commit(dest, f"{task.package} {task.version} with the setup of {task.id}")
    return Workspace(root=dest, start_commit=start, base_commit=start, edits=spans)


def apply_edit(root: Path, edit: Edit) -> EditSpan:
    """Apply one structured edit; anything ambiguous is an error, never a best guess."""
    path = root / edit.file
    if not path.is_file():
        raise WorkspaceError(f"setup edit: {edit.file} is not in the package")
    text = path.read_text(encoding="utf-8")
    if isinstance(edit, Replace):
        count = text.count(edit.old)
        if count != 1:
            raise WorkspaceError(f"setup edit: the text to replace occurs {count} times in {edit.file}, not once")
        start = text.index(edit.old)
        new_text = text.replace(edit.old, edit.new)
        replacement = edit.new
    else:
        start, end, replacement = _body_replacement(text, edit)
        new_text = text[:start] + replacement + text[end:]
    path.write_text(new_text, encoding="utf-8")
    first = new_text.count("\n", 0, start) + 1
    return EditSpan(file=edit.file, start_line=first, end_line=first + replacement.rstrip("\n").count("\n"))


def _body_replacement(text: str, edit: RemoveBody) -> tuple[int, int, str]:
    """Character span of the method's `{...}` body and a throwing body indented like the method."""
    class_name, method = edit.method.split("::")
    source = text.encode("utf-8")
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_php.language_php()))
    tree = parser.parse(source)
    body = _find_body(tree.root_node, class_name, method)
    if body is None:
        raise WorkspaceError(f"setup edit: no method {edit.method} with a body in {edit.file}")
    line_start = source.rfind(b"\n", 0, body.start_byte) + 1
    indent = source[line_start : line_start + len(source[line_start:]) - len(source[line_start:].lstrip())]
    pad = indent.decode("utf-8") if not indent.strip() else ""
    throw = f"{pad}    throw new \\LogicException('Not implemented: {edit.method}');"
    replacement = "{\n" + throw + "\n" + pad + "}"
    # tree-sitter offsets are bytes; the package files may hold non-ASCII text before the body
    start = len(source[: body.start_byte].decode("utf-8"))
    end = len(source[: body.end_byte].decode("utf-8"))
    return start, end, replacement


_CLASS_LIKE = {"class_declaration", "trait_declaration", "enum_declaration"}


def _find_body(node: tree_sitter.Node, class_name: str, method: str) -> tree_sitter.Node | None:
    for child in node.named_children:
        name = child.child_by_field_name("name")
        if child.type in _CLASS_LIKE and name is not None and name.text == class_name.encode():
            declarations = child.child_by_field_name("body")
            for member in declarations.named_children if declarations else []:
                member_name = member.child_by_field_name("name")
                if member.type == "method_declaration" and member_name and member_name.text == method.encode():
                    return member.child_by_field_name("body")
        found = _find_body(child, class_name, method)
        if found is not None:
            return found
    return None


def take_branch(ws: Workspace, branch: str) -> None:
    """Check out the run's branch in the evaluator's own copy of the package.

    `forgebot run` never touches the checkout it is given; it leaves its commits on a new branch.
    The evaluator's copy is its own, so it moves there to verify and measure what the bot did.
    """
    _git(ws.root, "checkout", "--quiet", "--force", branch, "--")


def changed_files(ws: Workspace) -> list[str]:
    """Files changed since the start commit, committed or not, untracked included."""
    _git(ws.root, "add", "-A", "--intent-to-add")
    out = _git(ws.root, "diff", "--name-only", "--no-renames", ws.start_commit)
    return sorted(line for line in out.splitlines() if line)


def file_at(ws: Workspace, commit: str, rel: str) -> str | None:
    """The text of `rel` at `commit`, or None when the file did not exist there."""
    done = gitrunner.run(["show", "--no-textconv", f"{commit}:{rel}"], Repo.at(ws.root))
    return done.stdout if done.returncode == 0 else None


def _git(root: Path, *args: str) -> str:
    """git through the product's hardened runner, as the evaluator's fixed identity and dates."""
    try:
        return gitrunner.git(root, *args, env=GIT_IDENTITY)
    except GitError as exc:
        raise CommandError(str(exc)) from exc


def _commit(root: Path, message: str) -> str:
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "--no-verify", "-m", message)
    return _git(root, "rev-parse", "HEAD").strip()

"""Which profile a repository is, when its `.forgebot.yml` names none: read from its own files.

A repository without a `profile:` would otherwise get one fixed language's checks (phpunit on a
Python package), which report nonsense or nothing. The rules are data: each profile's `[detect]`
table names its manifests and the evidence it needs besides them, so this module names no language.
The decision, in order:

1. **Claims.** A profile claims the repository when one of its `manifests` is a regular file at the
   top level of the tree. A profile with `confirm_*` evidence claims only when one of those holds
   besides: a top-level file of `confirm_files`, a package of `confirm_dependencies` named in the
   (JSON) manifest's dependencies, or (`confirm_sources`) one file of its `sources`.
2. **The same manifest, claimed twice** (TypeScript and JavaScript both read `package.json`): the claim
   confirmed by evidence beats the one on the manifest alone.
3. **Several languages claim** (a PHP application with a `package.json` for its front end): the one
   with most files of its `sources` anywhere in the tree.
4. **No claim:** the profile with most source files, when any has one.
5. **A tie** at 3 or 4: the profile whose name sorts first. **Nothing at all:** no profile, with a
   message naming what was looked for.

Repository files are untrusted, so every read is bounded: the top-level listing and the recursive
one by their output size (a tree too large to list is decided without counts, and the reason says
so), a manifest is read only when small enough and only when its dependencies decide anything, and
its JSON must parse (deep nesting is refused, not recursed into). The tree at a commit never
changes, so the choice is kept per commit.
"""

from __future__ import annotations

import fnmatch
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from foundation.gitrunner import GitError, Repo, run_bytes
from project.profiles import Profile, available_profiles, load_profile

MAX_TOP_LISTING = 4 * 1024 * 1024  # bytes of `ls-tree` output for the top level
MAX_TREE_LISTING = 32 * 1024 * 1024  # bytes of paths in the whole tree (~500,000 files)
MAX_MANIFEST_BYTES = 512 * 1024  # a manifest read for its dependencies
GIT_TIMEOUT = 30.0
_REGULAR = {b"100644", b"100755"}
_DEPENDENCY_KEYS = ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies")
_CACHE_SIZE = 256


@dataclass(frozen=True)
class ProfileChoice:
    """The profile a repository gets and why; `name` is None when nothing matched."""

    name: str | None
    reason: str
    detected: bool

    def describe(self) -> str:
        """For a trace, a status comment or a terminal, after "Profile: ": which profile and why."""
        if self.name is None:
            return f"none ({self.reason})"
        how = "detected" if self.detected else "set"
        return f"`{self.name}` ({how}: {self.reason})"


@dataclass(frozen=True)
class Tree:
    """What detection reads of a tree: top-level regular files, every path's name, and the blobs asked for."""

    top: dict[str, tuple[str, int]]  # name -> (blob id, size) for regular files at the top level
    paths: tuple[str, ...] | None  # every file's path; None when the tree was too large to list
    blobs: dict[str, bytes]  # top-level file name -> content, filled on demand by `read`

    def read(self, name: str) -> bytes | None:
        """Content of a top-level file that `blobs` was given (None when not read)."""
        return self.blobs.get(name)


@dataclass(frozen=True)
class _Claim:
    profile: str
    manifest: str
    evidence: str  # "" when the manifest alone claims


def _sources(profile: Profile) -> tuple[str, ...]:
    return profile.detect.sources or profile.file_globs


def _count(paths: tuple[str, ...], profile: Profile) -> int:
    """How many of `paths` are the profile's own source files (`sources`, less `ignore`)."""
    globs, ignore = _sources(profile), profile.detect.ignore
    count = 0
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        if any(fnmatch.fnmatchcase(name, g) for g in globs) and not any(fnmatch.fnmatchcase(name, g) for g in ignore):
            count += 1
    return count


def dependencies(text: bytes) -> set[str]:
    """Package names a JSON manifest's dependency tables name; empty when it is not such a manifest."""
    if len(text) > MAX_MANIFEST_BYTES:
        return set()
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # invalid, or nested past the parser's depth
        return set()
    if not isinstance(data, dict):
        return set()
    names: set[str] = set()
    for key in _DEPENDENCY_KEYS:
        table = data.get(key)
        if isinstance(table, dict):
            names.update(str(name) for name in table)
    return names


def _claim(profile: Profile, tree: Tree) -> _Claim | None:
    rules = profile.detect
    manifest = next((m for m in rules.manifests if m in tree.top), None)
    if manifest is None:
        return None
    if not (rules.confirm_files or rules.confirm_dependencies or rules.confirm_sources):
        return _Claim(profile.name, manifest, "")
    marker = next((f for f in rules.confirm_files if f in tree.top), None)
    if marker is not None:
        return _Claim(profile.name, manifest, f"with {marker}")
    if rules.confirm_dependencies:
        text = tree.read(manifest)
        named = dependencies(text) if text is not None else set()
        found = next((d for d in rules.confirm_dependencies if d in named), None)
        if found is not None:
            return _Claim(profile.name, manifest, f"depending on {found}")
    if rules.confirm_sources and tree.paths is not None:
        count = _count(tree.paths, profile)
        if count:
            return _Claim(profile.name, manifest, f"with {count} {profile.language} source file(s)")
    return None


def choose(profiles: list[Profile], tree: Tree) -> ProfileChoice:
    """The profile of `tree` by the rules in this module's docstring (pure: no git, for the tests)."""
    profiles = sorted(profiles, key=lambda p: p.name)
    claims = [c for c in (_claim(p, tree) for p in profiles) if c is not None]
    confirmed = {c.manifest for c in claims if c.evidence}
    claims = [c for c in claims if c.evidence or c.manifest not in confirmed]
    by_name = {p.name: p for p in profiles}
    if len(claims) == 1:
        (claim,) = claims
        because = f"{claim.manifest} at the top level" + (f", {claim.evidence}" if claim.evidence else "")
        return ProfileChoice(claim.profile, because, detected=True)
    candidates = [c.profile for c in claims] or [p.name for p in profiles]
    if tree.paths is None:
        if claims:
            names = ", ".join(f"{c.profile} ({c.manifest})" for c in claims)
            return ProfileChoice(claims[0].profile, f"several manifests at the top level: {names}; the tree is too "
                                 "large to count source files, so the first by name", detected=True)
        return ProfileChoice(None, "no manifest at the top level and the tree is too large to count source files; "
                             f"name one with `profile:` in `.forgebot.yml` ({_known(profiles)})", detected=True)
    counts = {name: _count(tree.paths, by_name[name]) for name in candidates}
    best = max(counts.values(), default=0)
    if best == 0 and not claims:
        every = sorted({m for p in profiles for m in p.detect.manifests})
        looked = " or ".join([", ".join(every[:-1]), every[-1]] if len(every) > 1 else every)
        return ProfileChoice(None, f"nothing matched: no {looked} at the top level and no source file of a known "
                             f"language; name one with `profile:` in `.forgebot.yml` ({_known(profiles)})",
                             detected=True)
    winner = next(name for name in candidates if counts[name] == best)  # sorted by name: ties go to the first
    tally = ", ".join(f"{name} {counts[name]}" for name in candidates)
    if claims:
        manifests = ", ".join(f"{c.manifest} ({c.profile})" for c in claims)
        return ProfileChoice(winner, f"several manifests at the top level: {manifests}; most source files "
                             f"({tally})", detected=True)
    return ProfileChoice(winner, f"no manifest at the top level; most source files ({tally})", detected=True)


def _known(profiles: list[Profile]) -> str:
    return "known: " + ", ".join(p.name for p in profiles)


def read_tree(repo_dir: Path, commit: str, manifests: set[str]) -> Tree:
    """The top level and the paths of `commit`, with the top-level `manifests` that are small enough read."""
    repo = Repo.at(repo_dir)
    top: dict[str, tuple[str, int]] = {}
    done = run_bytes(["ls-tree", "-z", "-l", "--full-tree", commit], repo, timeout=GIT_TIMEOUT,
                     max_output=MAX_TOP_LISTING)
    if done.returncode != 0:
        raise GitError(f"git ls-tree failed: {done.stderr[-300:]}")
    for entry in done.stdout.split(b"\0"):
        meta, _, raw = entry.partition(b"\t")
        fields = meta.split()
        if len(fields) == 4 and fields[0] in _REGULAR and fields[1] == b"blob" and fields[3].isdigit():
            top[raw.decode(errors="replace")] = (fields[2].decode(), int(fields[3]))
    paths: tuple[str, ...] | None
    try:
        listed = run_bytes(["ls-tree", "-r", "-z", "--name-only", "--full-tree", commit], repo,
                           timeout=GIT_TIMEOUT, max_output=MAX_TREE_LISTING)
        paths = tuple(p.decode(errors="replace") for p in listed.stdout.split(b"\0") if p) \
            if listed.returncode == 0 else None
    except GitError:  # past the output bound or the time limit: decided without counts
        paths = None
    blobs: dict[str, bytes] = {}
    for name in manifests & top.keys():
        blob, size = top[name]
        if size <= MAX_MANIFEST_BYTES:
            shown = run_bytes(["cat-file", "blob", blob], repo, timeout=GIT_TIMEOUT,
                              max_output=MAX_MANIFEST_BYTES)
            if shown.returncode == 0:
                blobs[name] = shown.stdout
    return Tree(top=top, paths=paths, blobs=blobs)


_cache: OrderedDict[str, ProfileChoice] = OrderedDict()
_lock = threading.Lock()


def detect_profile(repo_dir: Path, revision: str) -> ProfileChoice:
    """The profile of the tree at `revision` of the repository at `repo_dir`.

    A revision git cannot read gives no profile with the reason; a git failure is never raised, so a
    caller always has a choice to report.
    """
    repo = Repo.at(repo_dir)
    try:
        resolved = run_bytes(["rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], repo, timeout=GIT_TIMEOUT,
                             max_output=4096)
    except (GitError, OSError) as exc:
        return ProfileChoice(None, f"the repository could not be read ({str(exc)[:200]})", detected=True)
    commit = resolved.stdout.decode(errors="replace").strip()
    if resolved.returncode != 0 or not commit:
        return ProfileChoice(None, f"revision `{revision}` not found in the repository", detected=True)
    with _lock:
        if commit in _cache:
            _cache.move_to_end(commit)
            return _cache[commit]
    profiles = [load_profile(name) for name in available_profiles()]
    wanted = {m for p in profiles if p.detect.confirm_dependencies for m in p.detect.manifests}
    try:
        choice = choose(profiles, read_tree(repo_dir, commit, wanted))
    except (GitError, OSError) as exc:
        return ProfileChoice(None, f"the repository's files could not be listed ({str(exc)[:200]})", detected=True)
    with _lock:
        _cache[commit] = choice
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return choice

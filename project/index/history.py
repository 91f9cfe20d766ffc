"""Reading a repository's history for project memory: only what memory needs, and never all or nothing.

A real history holds what a naive `git show` of every commit chokes on: vendored minified files of
100 MB, generated sources, binaries, and in a damaged or partial clone objects that cannot be read at
all. So the reading is narrow and bounded:

- **what**: every commit's message and the paths it changed (a tree diff, no file content), and the
  `-U0` hunks of only the files a `declarations.Reader` parses (renames followed), minus blobs over
  `MAX_BLOB_BYTES` and files `.gitattributes` marks generated or binary;
- **how**: batches of commits, each git command's output bounded by construction (a batch whose
  diff would pass the runner's cap is split until it fits), blob contents read with their sizes known;
- **when something fails**: a batch git cannot finish is read again commit by commit from where it
  stopped; a commit whose diff still cannot be read keeps its message and says why (`Commit.skipped`);
  a blob git cannot read is left out with its file; a commit object git cannot read is reported as
  `Unread`. The caller counts them — one bad object costs one commit's entry points, not the memory.

Merges are read against their first parent, as `git log --first-parent` shows them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from foundation.gitrunner import MAX_OUTPUT, GitError, Repo, git, run, run_bytes
from project.index.declarations import Hunk
from project.index.generated import MAX_SOURCE_BYTES, marked

MAX_BLOB_BYTES = MAX_SOURCE_BYTES  # a source file past this is generated (a bundle, a compiled container)
BATCH = 200  # commits per batch of git commands
_DIFF_CAP = MAX_OUTPUT // 2
_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)
_NEXT_COMMIT = re.compile(rb"\n([0-9a-f]{40})\x00")
_NULL = "0" * 40


@dataclass
class Change:
    """One parsed file's change in a commit: paths and blobs on both sides, and the diff's hunks."""

    status: str  # A, M, D, R (renamed), T (type changed)
    old_path: str
    new_path: str
    old_blob: str  # "" when the file was added
    new_blob: str  # "" when the file was deleted
    hunks: list[Hunk] = field(default_factory=list)


@dataclass
class Commit:
    sha: str
    parents: tuple[str, ...]
    time: float
    subject: str
    body: str
    paths: tuple[str, ...] = ()  # every file the commit changed (against its first parent)
    changes: list[Change] = field(default_factory=list)  # the parsed files' changes, with hunks
    skipped: list[str] = field(default_factory=list)  # what of it was not read, and why


@dataclass(frozen=True)
class Unread:
    """A commit whose object git could not read: nothing of it is known but its id."""

    sha: str
    reason: str


def read(root: Path, shas: Sequence[str], patterns: Sequence[str]) -> Iterator[list[Commit | Unread]]:
    """The commits `shas` (in that order), `BATCH` at a time, with the parsed files' hunks."""
    attributes: dict[str, str] = {}
    for start in range(0, len(shas), BATCH):
        batch = shas[start:start + BATCH]
        try:
            yield _read_batch(root, batch, patterns, attributes)
        except GitError:  # a command the batch needs failed outright: each commit on its own
            yield [_read_alone(root, sha, patterns, attributes) for sha in batch]


def _read_alone(root: Path, sha: str, patterns: Sequence[str], attributes: dict[str, str]) -> Commit | Unread:
    try:
        return _read_batch(root, [sha], patterns, attributes)[0]
    except GitError as exc:
        return Unread(sha, _first_line(exc))


def _read_batch(root: Path, shas: Sequence[str], patterns: Sequence[str],
                attributes: dict[str, str]) -> list[Commit | Unread]:
    objects = _commit_objects(root, shas)
    commits = {c.sha: c for c in objects.commits}
    listed, failed = _diff_each(root, _LISTING, objects.commits, ())
    parsed: dict[str, list[_Entry]] = {}
    for commit in objects.commits:
        if commit.sha in failed:
            commit.skipped.append(f"files not listed: {failed[commit.sha]}")
            continue
        entries = listed.get(commit.sha, _Section([], b"")).entries
        commit.paths = tuple(dict.fromkeys(e.new_path or e.old_path for e in entries))
        parsed[commit.sha] = [e for e in entries if _matches(e.new_path or e.old_path, patterns)]
    excluded = _exclusions(root, parsed, attributes)
    plain = [commits[sha] for sha, entries in parsed.items() if entries and not excluded.get(sha)]
    patches, failed = _diff_each(root, _PATCHES, plain, patterns)
    for sha, reasons in excluded.items():
        commit = commits[sha]
        commit.skipped += [f"{path}: {why}" for path, why in reasons.items()]
        rest = [e for e in parsed[sha] if (e.new_path or e.old_path) not in reasons]
        if rest:
            spec = [*patterns, *(f":(exclude,literal){path}" for path in reasons)]
            alone, problem = _diff_each(root, _PATCHES, [commit], spec)
            patches.update(alone)
            failed.update(problem)
    for sha, section in patches.items():
        commits[sha].changes = _changes(section)
    for sha, reason in failed.items():
        commits[sha].skipped.append(f"diff not read: {reason}")
    missing = {sha: Unread(sha, "commit object unreadable") for sha in objects.missing}
    return [commits.get(sha) or missing.get(sha) or Unread(sha, "commit object unreadable") for sha in shas]


def listing(root: Path, max_commits: int) -> tuple[list[str], dict[str, tuple[str, ...]], str]:
    """The newest `max_commits` commits reachable from HEAD, oldest first (parents before children),
    their parents, and a note when git could not list them whole (a missing commit object cuts the
    walk there)."""
    try:
        lines = git(root, "rev-list", "--topo-order", "--parents", f"--max-count={max_commits}", "HEAD").splitlines()
        parents = {fields[0]: tuple(fields[1:]) for fields in (line.split() for line in lines) if fields}
        return list(reversed(parents)), parents, _cut(root, len(parents), max_commits)
    except GitError as exc:
        shas, parents, missing = _walk(root, max_commits)
        return list(reversed(shas)), parents, f"history listed without git rev-list ({_first_line(exc)}): " \
                                              f"{len(missing)} commit objects missing, history behind them not read"


def _cut(root: Path, listed: int, max_commits: int) -> str:
    """A note when the limit left older commits out (phpunit has 26,000): a question about an old decision
    then finds nothing, and without the note nothing says why."""
    if listed < max_commits:
        return ""
    total = int(git(root, "rev-list", "--count", "HEAD").strip() or 0)
    if total <= listed:
        return ""
    return f"history: the newest {listed:,} of HEAD's {total:,} commits are remembered; the older {total - listed:,} " \
           f"are not searched"


def _walk(root: Path, max_commits: int) -> tuple[list[str], dict[str, tuple[str, ...]], list[str]]:
    """Commits reachable from HEAD through readable commit objects, newest first by commit time."""
    head = git(root, "rev-parse", "HEAD").strip()
    seen, missing, order = {head}, list[str](), list[tuple[float, str]]()
    parents: dict[str, tuple[str, ...]] = {}
    frontier = [head]
    while frontier and len(order) < max_commits:
        found = _commit_objects(root, frontier)
        frontier = []
        missing += found.missing
        for commit in found.commits:
            order.append((commit.time, commit.sha))
            parents[commit.sha] = commit.parents
            for parent in commit.parents:
                if parent not in seen:
                    seen.add(parent)
                    frontier.append(parent)
    order.sort(reverse=True)
    kept = [sha for _, sha in order[:max_commits]]
    return kept, {sha: parents[sha] for sha in kept}, missing


@dataclass
class _Objects:
    commits: list[Commit] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _commit_objects(root: Path, shas: Sequence[str]) -> _Objects:
    """Commit objects through `cat-file --batch`: a missing one is listed, never fatal."""
    found = _Objects()
    for sha, kind, content in _batch(root, shas):
        if kind != "commit" or content is None:
            found.missing.append(sha)
        else:
            found.commits.append(_parse_commit(sha, content))
    return found


def _parse_commit(sha: str, content: bytes) -> Commit:
    head, _, message = content.partition(b"\n\n")
    parents: list[str] = []
    when, encoding = 0.0, "utf-8"
    for line in head.split(b"\n"):
        if line.startswith(b"parent "):
            parents.append(line[7:47].decode())
        elif line.startswith(b"committer "):
            fields = line.rsplit(b" ", 2)
            when = float(fields[1]) if len(fields) == 3 and fields[1].isdigit() else 0.0
        elif line.startswith(b"encoding "):
            encoding = line[9:].decode("ascii", "replace").strip()
    try:
        text = message.decode(encoding, "replace")
    except LookupError:
        text = message.decode("utf-8", "replace")
    paragraphs = text.strip().split("\n\n", 1)
    subject = " ".join(paragraphs[0].split())
    body = paragraphs[1].strip() if len(paragraphs) > 1 else ""
    return Commit(sha, tuple(parents), when, subject, body)


def _batch(root: Path, ids: Sequence[str]) -> Iterator[tuple[str, str, bytes | None]]:
    """(id, type, content) of each object; content None when git could not read it.

    One `cat-file --batch` for all of them; should it fail (a corrupt object kills it), what it wrote
    before is kept and the rest are read one at a time, so one bad object costs only itself.
    """
    if not ids:
        return
    done = run_bytes(["cat-file", "--batch"], Repo.at(root), input=("\n".join(ids) + "\n").encode())
    parsed = list(_parse_batch(done.stdout))
    yield from parsed
    if done.returncode == 0 and len(parsed) == len(ids):
        return
    for object_id in ids[len(parsed):]:
        alone = run_bytes(["cat-file", "--batch"], Repo.at(root), input=f"{object_id}\n".encode())
        one = list(_parse_batch(alone.stdout)) if alone.returncode == 0 else []
        yield one[0] if one else (object_id, "unreadable", None)


def _parse_batch(out: bytes) -> Iterator[tuple[str, str, bytes | None]]:
    pos = 0
    while pos < len(out):
        end = out.find(b"\n", pos)
        if end < 0:
            return
        fields = out[pos:end].decode(errors="replace").split()
        if len(fields) == 2 and fields[1] in ("missing", "ambiguous"):
            yield fields[0], fields[1], None
            pos = end + 1
            continue
        if len(fields) != 3 or not fields[2].isdigit() or end + 1 + int(fields[2]) > len(out):
            return  # cut off: the caller reads the rest one by one
        size = int(fields[2])
        yield fields[0], fields[1], out[end + 1:end + 1 + size]
        pos = end + 1 + size + 1


def blobs(root: Path, ids: Sequence[str]) -> dict[str, bytes | None]:
    """Contents of blobs (None: unreadable), read in calls of bounded output."""
    found: dict[str, bytes | None] = {}
    sizes = blob_sizes(root, ids)
    chunk: list[str] = []
    total = 0
    for blob in dict.fromkeys(ids):
        size = sizes.get(blob)
        if size is None:
            found[blob] = None
            continue
        if chunk and total + size > _DIFF_CAP:
            found.update((sha, content) for sha, _, content in _batch(root, chunk))
            chunk, total = [], 0
        chunk.append(blob)
        total += size
    found.update((sha, content) for sha, _, content in _batch(root, chunk))
    return found


def blob_sizes(root: Path, ids: Sequence[str]) -> dict[str, int]:
    """Size of each readable blob; a missing one is absent from the answer."""
    unique = list(dict.fromkeys(ids))
    if not unique:
        return {}
    done = run(["cat-file", "--batch-check"], Repo.at(root), input="\n".join(unique) + "\n")
    if done.returncode != 0:
        raise GitError(f"git cat-file --batch-check failed: {done.stderr[-300:]}")
    sizes: dict[str, int] = {}
    for line in done.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] == "blob" and fields[2].isdigit():
            sizes[fields[0]] = int(fields[2])
    return sizes


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return (lines[-1] if lines else text)[:200]


_LISTING = ("-r", "-z", "--raw", "--no-renames", "--no-abbrev")
_PATCHES = ("-r", "-z", "--raw", "-p", "-U0", "-M", "--no-abbrev", "--full-index", "--no-color")


@dataclass(frozen=True)
class _Entry:
    status: str
    old_blob: str
    new_blob: str
    old_path: str
    new_path: str


@dataclass
class _Section:
    """One commit's part of a `diff-tree --stdin -z --raw [-p]` output."""

    entries: list[_Entry]
    patch: bytes


def _matches(path: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(path, pattern) for pattern in patterns)


def _diff_each(root: Path, options: Sequence[str], commits: Sequence[Commit],
               pathspec: Sequence[str]) -> tuple[dict[str, _Section], dict[str, str]]:
    """Each commit's diff against its first parent: sections by commit, and commits git could not diff.

    One `diff-tree --stdin` for all; when it dies, the commits it finished are kept and it starts again
    at the one it was on, which is then tried alone. Output past the cap splits the batch in halves.
    """
    sections: dict[str, _Section] = {}
    failed: dict[str, str] = {}
    todo = list(commits)
    while todo:
        stdin = "".join(f"{c.sha} {c.parents[0]}\n" if c.parents else f"{c.sha}\n" for c in todo).encode()
        try:
            done = run_bytes(["diff-tree", "--stdin", "--root", *options, "--", *pathspec], Repo.at(root),
                             input=stdin, max_output=_DIFF_CAP)
        except GitError as exc:  # over the output cap, or too slow: halve the batch
            if len(todo) == 1:
                failed[todo[0].sha] = _first_line(exc)
                return sections, failed
            half = len(todo) // 2
            for part in (todo[:half], todo[half:]):
                more, bad = _diff_each(root, options, part, pathspec)
                sections.update(more)
                failed.update(bad)
            return sections, failed
        found = _split(done.stdout)
        if done.returncode == 0:
            sections.update(found)
            return sections, failed
        order = {c.sha: i for i, c in enumerate(todo)}
        seen = [sha for sha in found if sha in order]
        if not seen or seen == [todo[0].sha]:  # the first commit itself: alone, it fails or passes
            if len(todo) > 1:
                alone, bad = _diff_each(root, options, todo[:1], pathspec)
                sections.update(alone)
                failed.update(bad)
            else:
                failed[todo[0].sha] = done.stderr.strip().splitlines()[-1][:200] if done.stderr.strip() else \
                    f"git diff-tree exited {done.returncode}"
            todo = todo[1:]
            continue
        for sha in seen[:-1]:  # the last one may be cut short: it is read again
            sections[sha] = found[sha]
        todo = todo[order[seen[-1]]:]
    return sections, failed


def _split(out: bytes) -> dict[str, _Section]:
    """Sections of a `diff-tree --stdin -z --raw [-p]` output by commit, in order; a cut-off tail is kept
    as far as it goes (the caller knows whether the command finished)."""
    found: dict[str, _Section] = {}
    pos = 0
    try:
        while pos + 41 <= len(out) and out[pos + 40] == 0:
            sha = out[pos:pos + 40].decode()
            pos += 41
            section = found[sha] = _Section([], b"")
            while out[pos:pos + 1] == b":":
                end = out.index(b"\0", pos)
                meta = out[pos + 1:end].decode().split()
                first = out.index(b"\0", end + 1)
                paths = [out[end + 1:first].decode(errors="replace")]
                pos = first + 1
                if meta[4][:1] in ("R", "C"):
                    second = out.index(b"\0", pos)
                    paths.append(out[pos:second].decode(errors="replace"))
                    pos = second + 1
                old, new = (meta[2], meta[3])
                section.entries.append(_Entry(meta[4][:1], "" if old == _NULL else old, "" if new == _NULL else new,
                                              paths[0], paths[-1]))
            if out[pos:pos + 1] == b"\0":  # the patch text follows the listing
                following = _NEXT_COMMIT.search(out, pos + 1)
                end = following.start() + 1 if following else len(out)
                section.patch = out[pos + 1:end]
                pos = end
    except (ValueError, IndexError):
        pass
    return found


def patches(root: Path, shas: Sequence[str], paths: Sequence[str], context: int = 3) -> dict[str, dict[str, bytes]]:
    """The patch text of each of `paths` in each commit (against its only parent; renames followed),
    by commit and by the file's path at that commit. A commit git cannot diff is left out."""
    commits = [Commit(sha, (), 0.0, "", "") for sha in shas]
    options = ("-r", "-z", "--raw", "-p", f"-U{context}", "-M", "--no-abbrev", "--no-color")
    sections, _ = _diff_each(root, options, commits, [f":(literal){path}" for path in dict.fromkeys(paths)])
    return {sha: {e.new_path or e.old_path: part for e, part in _parts(section)} for sha, section in sections.items()}


def _parts(section: _Section) -> Iterator[tuple[_Entry, bytes]]:
    """Each listed entry with its part of the patch (one `diff --git` part per entry, in order)."""
    starts = [m.start() for m in re.finditer(rb"(?:^|\n)diff --git ", section.patch)]
    for index, entry in enumerate(section.entries):
        end = starts[index + 1] if index + 1 < len(starts) else None
        yield entry, section.patch[starts[index]:end] if index < len(starts) else b""


def _changes(section: _Section) -> list[Change]:
    """The listing's entries with their hunks."""
    changes = []
    for entry, part in _parts(section):
        if entry.status not in "AMDRT":
            continue
        hunks = [(int(m[1]), int(m[2] or 1), int(m[3]), int(m[4] or 1)) for m in _HUNK.finditer(part)]
        if hunks or (entry.status == "R" and entry.old_blob != entry.new_blob):
            changes.append(Change(entry.status, entry.old_path, entry.new_path, entry.old_blob, entry.new_blob, hunks))
    return changes


def _exclusions(root: Path, parsed: dict[str, list[_Entry]],
                attributes: dict[str, str]) -> dict[str, dict[str, str]]:
    """Per commit, the parsed files left out and why: an unreadable or oversized blob, generated code."""
    entries = [e for listed in parsed.values() for e in listed]
    sizes = blob_sizes(root, [b for e in entries for b in (e.old_blob, e.new_blob) if b])
    _attributes(root, [e.new_path or e.old_path for e in entries], attributes)
    excluded: dict[str, dict[str, str]] = {}
    for sha, listed in parsed.items():
        for entry in listed:
            path = entry.new_path or entry.old_path
            why = attributes.get(path, "")
            for blob in (entry.old_blob, entry.new_blob):
                if blob and blob not in sizes:
                    why = f"object {blob[:12]} unreadable"
                elif blob and sizes[blob] > MAX_BLOB_BYTES:
                    why = why or f"{sizes[blob] / 1048576:.1f} MiB, over the {MAX_BLOB_BYTES // 1048576} MiB limit"
            if why:
                excluded.setdefault(sha, {})[path] = why
    return excluded


def _attributes(root: Path, paths: Sequence[str], known: dict[str, str]) -> None:
    """Record in `known` why `.gitattributes` keeps each new path out ("" when it does not)."""
    new = [p for p in dict.fromkeys(paths) if p not in known]
    found = marked(root, new)
    for path in new:
        known[path] = found.get(path, "")

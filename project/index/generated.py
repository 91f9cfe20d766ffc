"""Which files of a checkout are not hand-written source, and so stay out of the code index.

A repository holds bundles, minified libraries and generated tables beside its code: `public/js/app.js`
built by webpack, a vendored `jquery.min.js`, a table of constants written by a script. Their
definitions are noise to the graph (thousands of `e`, `t` and `n`), and a one-line file of 10 MB cut
into one search chunk per function made every chunk the whole line: a 350 kB file took 111 s to
chunk. Tools that read code for people leave them out the same way (GitHub's Linguist marks minified
and generated files, Sourcegraph skips large files).

A file is left out when it is larger than `MAX_SOURCE_BYTES`, or when its lines average more than
`MINIFIED_LINE_BYTES` (minified or generated: hand-written code averages 30-70 bytes a line; the widest
hand-written file of Symfony, Laravel, sympy and typeorm, an HTML page in a PHP template, averages 261),
unless those long lines are a little data, not code (an icon's SVG path: `_data_lines`).
The project history applies the same size limit to the blobs it reads. A left-out file is still in the
checkout: the agent reads it with its file tools like any other file.

A file `.gitattributes` marks `linguist-generated`, `linguist-vendored` or binary (`binary`, `-diff`) is
left out too, the marks GitHub itself reads (`marked`): the project history skips such blobs for the
same reason.

Once parsed, a file nested deeper than `MAX_NESTING` is left out too: a generated fluent chain of
100,000 calls is a tree 100,000 levels deep, and tree-sitter's query cursor, past 65,535 levels, took
84 s on one such 700 kB file (and 204 s at 140,000). Written code nests a few dozen levels.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import tree_sitter

from foundation.gitrunner import GitError, GitTampered, Repo, run

# why a listed file that resolves outside the checkout (a committed symlink to `/etc/passwd`) is not read
OUTSIDE = "a link to outside the checkout"
MAX_SOURCE_BYTES = 1024 * 1024
MINIFIED_LINE_BYTES = 300
_MINIFIED_FROM_BYTES = 4096  # below this a file costs little whatever its shape


def left_out(size: int, source: bytes | None = None) -> str:
    """Why a file of `size` bytes (content `source`, when read) is not indexed, or "" when it is."""
    if size > MAX_SOURCE_BYTES:
        return f"{size / 1048576:.1f} MiB, over the {MAX_SOURCE_BYTES // 1048576} MiB limit for source files"
    if source is not None and len(source) >= _MINIFIED_FROM_BYTES:
        average = len(source) / (source.count(b"\n") + 1)
        if average > MINIFIED_LINE_BYTES and not _data_lines(source):
            return f"minified or generated: lines of {average:.0f} bytes on average"
    return ""


# what the long lines of a hand-written file may hold and the file still be read: at most this much data
DATA_LINE_BYTES = 64 * 1024
_CODE_MARKS = (b";", b"{", b"}", b"(", b")", b"=")


def _data_lines(source: bytes) -> bool:
    """Whether a file's long lines are a little data rather than code: an icon component's SVG path, a
    short inline image (excalidraw's hand-written `ExcalidrawLogo.tsx` has 65 short lines and three SVG
    paths of 16.6, 4.7 and 4.6 kB). Minified code is dense with `;{}()=` (8-14 % of its bytes in minified
    libraries, 3 % in a bundle of locale strings); such data holds almost none. A long blob (a WebAssembly
    module in base64) still keeps the file out: it costs what a minified file costs."""
    long = [line for line in source.split(b"\n") if len(line) > MINIFIED_LINE_BYTES]
    size = sum(map(len, long))
    marks = sum(line.count(mark) for line in long for mark in _CODE_MARKS)
    return size <= DATA_LINE_BYTES and marks < 0.01 * size


MAX_NESTING = 10_000


def too_deep(tree: tree_sitter.Tree) -> str:
    """Why `tree` is left out for its depth, or "" (depth-first through the subtrees big enough to
    reach past `MAX_NESTING`: a subtree of fewer descendants cannot, so most files cost one look)."""
    cursor = tree.walk()
    depth = 0
    while depth <= MAX_NESTING:
        node = cursor.node
        if node is not None and depth + node.descendant_count > MAX_NESTING and cursor.goto_first_child():
            depth += 1
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return ""
            depth -= 1
    return f"generated: nested over {MAX_NESTING:,} levels deep"


_MARKS = ("linguist-generated", "linguist-vendored", "diff", "binary")


def marked(root: Path, paths: Sequence[str]) -> dict[str, str]:
    """Why `.gitattributes` keeps each of `paths` out, for those it does (one `git check-attr` for all);
    nothing outside a git checkout. A tampered repository raises (GitTampered), as every git command."""
    if not paths:
        return {}
    try:
        done = run(["check-attr", "-z", "--stdin", *_MARKS], Repo.at(root), input="\0".join(paths) + "\0")
    except GitTampered:
        raise
    except GitError:
        return {}
    if done.returncode != 0:
        return {}
    found: dict[str, str] = {}
    fields = done.stdout.split("\0")
    for index in range(0, len(fields) - 2, 3):
        path, name, value = fields[index:index + 3]
        if name.startswith("linguist-") and value in ("set", "true"):
            found[path] = f"marked {name.removeprefix('linguist-')} in .gitattributes"
        elif (name, value) in (("diff", "unset"), ("binary", "set")):
            found.setdefault(path, "marked binary in .gitattributes")
    return found

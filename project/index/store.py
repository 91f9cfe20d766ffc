"""The code graph's tables in the index database, and the two ways to fill them: build and sync.

Both take an explicit list of files (never a walk of the repository); a file's content hash (git's
blob id) decides whether it is parsed again. A file's rows are replaced in one transaction, so a
reader sees either the old or the new version of it. A file that no longer parses cleanly keeps its
last rows and is marked stale: a half-typed edit must not erase what the graph knew about the file.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import marshal
import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from project.index.aliases import NO_ALIASES, Aliases, is_configuration, read_aliases
from project.index.db import Connection
from project.index.extractors import Parsers, extractor_for
from project.index.generated import OUTSIDE, left_out, marked
from project.index.parse import FileRows, content_hash
from project.index.timings import Timings, peak_rss_mb

SCHEMA_VERSION = "1"
# The rules files are read by: a build by other rules (an index made by an earlier release, whose
# extractors wrote other rows) reads every file again instead of keeping the rows of unchanged ones.
# Raise it with any change to what an extractor writes, or to the search rows cut along its definitions
# (`search_store.chunk_row`: 4 named a Python or TypeScript member's class by its own name; 5 reads
# JavaScript's assignment definitions, `View.prototype.render = function…`, and `module.exports = f`;
# `const b = a` as another name of a function; `<Button/>` as a call; 6 reads PHP's callables,
# `[UserController::class, 'show']` and `add_action('init', 'boot')`, as calls; 7 reads a Python or
# TypeScript function handed over as a value, `map(fmt, xs)` and `onClick={save}`, as a reference; 8 a
# component's event handler named alone, Vue's `@click="save"`, as one; 9 a function of an imported
# module handed over, `path("", views.index)`; 10 a Laravel route's 'HomeController@index'; 11 the
# handlers a Symfony subscriber's getSubscribedEvents() names; 12 a TypeScript member's decorators; 13
# the actions a Laravel Route::resource() routes; 14 the decorators of an exported TypeScript class,
# `@Injectable() export class X`; 15 a field Angular's `inject(X)` fills as an instance of X; 16 an Angular
# component's `template` row to its `templateUrl`; 17 a Python method a framework calls for a declared
# field, graphene's `resolve_total` of `total = graphene.Int()`; 18 a Celery or Dramatiq task queued,
# `send_email.delay(to)`, as a call of the function; 19 a function handed over in a map, a list, a
# conditional or a return; 20 a module's instance, `db = Database()`, as an `instance` row; 21 PHP's
# untyped parameters and properties typed by their docblock's `@param`/`@var`; 22 a TypeScript file whose
# only errors are variance annotations inside a type parameter, `<out T extends X = Y>`, read whole).
ROWS_VERSION = "22"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, content_hash TEXT NOT NULL, language TEXT NOT NULL,
    stale INTEGER NOT NULL DEFAULT 0, indexed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS symbols (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, kind TEXT NOT NULL, fqn TEXT NOT NULL COLLATE NOCASE,
    name TEXT NOT NULL COLLATE NOCASE, parent_fqn TEXT NOT NULL COLLATE NOCASE,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, start_byte INTEGER NOT NULL,
    end_byte INTEGER NOT NULL, signature TEXT NOT NULL, docblock TEXT NOT NULL, attributes TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS relations (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, kind TEXT NOT NULL,
    source_fqn TEXT NOT NULL COLLATE NOCASE, target_name TEXT NOT NULL COLLATE NOCASE,
    target_fqn TEXT NOT NULL COLLATE NOCASE, fallback_fqn TEXT NOT NULL COLLATE NOCASE, line INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS symbols_path ON symbols(path);
CREATE INDEX IF NOT EXISTS symbols_fqn ON symbols(fqn);
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name);
CREATE INDEX IF NOT EXISTS relations_path ON relations(path);
CREATE INDEX IF NOT EXISTS relations_target_name ON relations(target_name);
CREATE INDEX IF NOT EXISTS relations_target_fqn ON relations(target_fqn);
CREATE INDEX IF NOT EXISTS relations_fallback ON relations(fallback_fqn) WHERE fallback_fqn != '';
CREATE INDEX IF NOT EXISTS relations_source ON relations(source_fqn);
CREATE INDEX IF NOT EXISTS relations_templates ON relations(source_fqn) WHERE kind = 'template';
"""

@dataclass
class SyncReport:
    """What a build or sync did, by repository-relative path."""

    parsed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    symbols: int = 0
    relations: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # path -> why the extractor could not read it
    left_out: dict[str, str] = field(default_factory=dict)  # path -> why it is not source (`generated`)
    unread_config: list[str] = field(default_factory=list)  # tsconfig/package.json files not read, and why


def ensure_schema(conn: Connection) -> None:
    conn.executescript(_SCHEMA)
    with conn:
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('graph.schema', ?)", (SCHEMA_VERSION,))


def relative_path(root: Path | str, path: Path | str) -> str:
    """Validate that `path` names a file inside `root` and return it relative, with forward slashes.

    Symlinks are resolved first, so a link pointing out of the checkout is rejected too.
    """
    return _relative(os.path.realpath(root), path)


def _relative(base: str, path: Path | str) -> str:
    full = os.path.realpath(os.path.join(base, os.fspath(path)))
    if not full.startswith(base + os.sep):
        raise ValueError(f"path {str(path)!r} is outside the repository {base!r}")
    return full[len(base) + 1 :].replace(os.sep, "/")


class _Resolver:
    """`_relative` for a whole file list: a directory's real path is resolved once, not once per file.

    Resolving every path of a 10,000-file checkout cost more than a second of a build; a symlinked
    file (or one reached through a symlinked directory) is still resolved and checked in full.
    """

    def __init__(self, base: str) -> None:
        self._base = base
        self._dirs: dict[str, bool] = {}  # directory as listed -> it resolves to itself under base

    def relative(self, path: Path | str) -> str:
        text = os.fspath(path)
        head = os.path.dirname(text)
        if os.path.isabs(text) or ".." in text.split(os.sep) or not self._plain_dir(head):
            return _relative(self._base, text)
        if os.path.islink(os.path.join(self._base, text)):
            return _relative(self._base, text)
        return text.replace(os.sep, "/")

    def _plain_dir(self, head: str) -> bool:
        """Whether directory `head` resolves to itself under the base: no directory on its way is a
        symlink. Each directory is looked at once (one lstat), its ancestors' answers reused: resolving
        each directory's whole path cost a tenth of typeorm's build (1,863 directories, 15,000 lstats)."""
        plain = self._dirs.get(head)
        if plain is not None:
            return plain
        unknown = []
        directory = os.path.normpath(head) if head else "."
        while directory not in ("", ".") and directory not in self._dirs:  # up to a known one, or the base
            unknown.append(directory)
            directory = os.path.dirname(directory)
        plain = self._dirs.get(directory, True)  # the base is a real path (`_wanted` resolves it)
        for directory in reversed(unknown):
            plain = plain and not os.path.islink(os.path.join(self._base, directory))
            self._dirs[directory] = plain
        self._dirs[head] = plain
        return plain


# Runs beside the parse, in the parser process: derives more from a file's rows and bytes (the base
# index's search rows), so that work is spread over the pool too; a module-level function (pickled).
# It records its own phases in the Timings it is given.
Prepare = Callable[[FileRows, bytes, Timings], object]
# Runs in the building process inside the build's transaction, for each file written.
Consume = Callable[[FileRows], None]


# a parser process's copy of the build's aliases, sent once when the process starts (`_receive`)
_received: Aliases | None = None


def _receive(aliases: Aliases) -> None:
    global _received
    _received = aliases


def _parse_batch(
    root: str, paths: Sequence[str], prepare: Prepare | None = None, aliases: Aliases | None = None
) -> tuple[list[FileRows], Timings]:
    """Worker entry point: read, parse and extract files under `root`, timing each phase.

    The cyclic garbage collector is off for the batch: extraction allocates millions of small
    objects and the rows of the batch stay alive until it returns, so the collector's repeated
    scans of them cost 7-8% of the extraction and free nothing; a batch is a bounded slice of the
    files and whatever cycles it made are collected once, after it.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _parse_files(root, paths, prepare, aliases if aliases is not None else _received)
    finally:
        if collecting:
            gc.enable()


_FIELDS = tuple(f.name for f in dataclasses.fields(FileRows))  # in the order FileRows takes them


def _parse_packed(root: str, paths: Sequence[str], keep_source: bool) -> tuple[bytes, Timings]:
    """Parser process entry point: `_parse_batch`, its rows sent back packed by `marshal`.

    The rows are plain tuples of strings and numbers, which marshal writes about three times as fast
    as pickle (0.11 s against 0.33 s for sympy's 450,000 relation rows); the writing is on the parser
    process's path, which is the build's longest, and the building process, which waits on it, reads
    them back as fast as pickle would. Only this process's own parser processes write what
    `_unpacked` reads: both run the same interpreter.
    """
    found, spent = _parse_batch(root, paths, _keep_source if keep_source else None)
    return marshal.dumps([tuple(getattr(rows, name) for name in _FIELDS) for rows in found]), spent


def _unpacked(packed: bytes) -> list[FileRows]:
    return [FileRows(*fields) for fields in marshal.loads(packed)]


def _parse_files(
    root: str, paths: Sequence[str], prepare: Prepare | None, aliases: Aliases | None
) -> tuple[list[FileRows], Timings]:
    """Read, parse and extract each file, adding each phase's seconds up here and into the Timings once.

    Three phases of 10,000 files are 30,000 entries into a timing context: clocks read inline and
    summed locally cost a third of that. Freeing a tree counts for the parse: a raw parse pays for
    it too (it drops each tree at once), and it is tree-sitter's work (0.16 s of Symfony's 1.8 s).
    """
    parsers = Parsers()
    timings = Timings()
    found = []
    wall, cpu = time.perf_counter, time.process_time
    spent = [0.0] * 6  # wall and CPU seconds of: read and hash, parse, extract
    for rel in paths:
        extractor = extractor_for(rel)
        if extractor is None:
            continue
        w0, c0 = wall(), cpu()
        with open(os.path.join(root, rel), "rb") as file:
            why = left_out(os.fstat(file.fileno()).st_size)  # a 2 GB data file is not read to say so
            source = b"" if why else file.read()
        digest = content_hash(source)
        why = why or left_out(len(source), source)
        if why:
            spent[0] += wall() - w0
            spent[1] += cpu() - c0
            found.append(FileRows(rel, digest, extractor.language, False, [], [], left_out=why))
            continue
        w1, c1 = wall(), cpu()
        tree = parsers.get(extractor).parse(source)
        w2, c2 = wall(), cpu()
        rows = extractor.read(rel, source, tree, digest, aliases)
        w3, c3 = wall(), cpu()
        del tree
        w4, c4 = wall(), cpu()
        spent[0] += w1 - w0
        spent[1] += c1 - c0
        spent[2] += w2 - w1 + w4 - w3
        spent[3] += c2 - c1 + c4 - c3
        spent[4] += w3 - w2
        spent[5] += c3 - c2
        found.append(rows if prepare is None else dataclasses.replace(rows, prepared=prepare(rows, source, timings)))
    if found:
        for i, phase in enumerate(("read and hash", "parse", "extract")):
            timings.add(phase, spent[2 * i + 1], spent[2 * i])
    timings.peak_mb_elsewhere = peak_rss_mb()
    return found, timings


def write_file(conn: Connection, rows: FileRows, now: float) -> bool:
    """Replace one file's rows (call inside a transaction); False if its last good rows were kept."""
    previous = conn.execute("SELECT 1 FROM symbols WHERE path = ? LIMIT 1", (rows.path,)).fetchone()
    if rows.has_errors and previous is not None:
        conn.execute(
            "UPDATE files SET content_hash = ?, stale = 1, indexed_at = ? WHERE path = ?",
            (rows.content_hash, now, rows.path),
        )
        return False
    conn.execute("DELETE FROM symbols WHERE path = ?", (rows.path,))
    conn.execute("DELETE FROM relations WHERE path = ?", (rows.path,))
    conn.executemany("INSERT INTO symbols VALUES (NULL,?,?,?,?,?,?,?,?,?,?,?,?)", rows.symbols)
    conn.executemany("INSERT INTO relations VALUES (NULL,?,?,?,?,?,?,?)", rows.relations)
    conn.execute(
        "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)",
        (rows.path, rows.content_hash, rows.language, int(rows.has_errors), now),
    )
    return True


def _remove(conn: Connection, path: str) -> None:
    for table in ("symbols", "relations", "files"):
        conn.execute(f"DELETE FROM {table} WHERE path = ?", (path,))


def _batches(paths: list[str], size: int) -> list[list[str]]:
    return [paths[i : i + size] for i in range(0, len(paths), size)]


# below this many files, starting parser processes costs more than it saves
PARALLEL_FROM_FILES = 200


def _keep_source(rows: FileRows, source: bytes, timings: Timings) -> bytes:
    """In a parser process, when the building process prepares: send the bytes it needs along."""
    return source


def _pooled(paths: Sequence[str], workers: int) -> bool:
    """Whether `paths` are parsed in parser processes (otherwise here, one after another)."""
    return workers >= 1 and len(paths) >= max(PARALLEL_FROM_FILES, 2 * workers)


def _start_method() -> multiprocessing.context.BaseContext:
    """How parser processes start: forked when this process runs one thread, else by a fork server.

    A forked child could inherit a lock another thread held (the worker process runs the background
    vector build and onnxruntime's threads, native ones included), so a process with threads starts
    them from a clean fork server, whose start and imports cost about 0.15 s. `forgebot index` runs
    one thread; its parser processes are forked and begin at once, with everything already imported.
    """
    try:
        single = len(os.listdir("/proc/self/task")) == 1  # every OS thread, not only Python's
    except OSError:
        single = False  # no /proc: assume threads
    return multiprocessing.get_context("fork" if single else "forkserver")


def _parse_all(
    root: Path, paths: list[str], workers: int, prepare: Prepare | None, timings: Timings, aliases: Aliases
) -> Iterable[FileRows]:
    """Every file's rows, in order; `prepare` applied to each.

    With `workers` parser processes, this process is left the writes and `prepare` (chunking and
    full-text terms): they run here while the parser processes read, parse and extract the next
    files, so even one parser process overlaps the two halves of the work on two cores.
    """
    if not _pooled(paths, workers):
        found, spent = _parse_batch(str(root), paths, prepare, aliases)
        timings.merge(spent)
        yield from found
        return
    # small batches: the last one's writes (and the first one's wait) are what the overlap cannot hide
    size = max(8, len(paths) // (workers * 32))
    with ProcessPoolExecutor(max_workers=workers, mp_context=_start_method(), initializer=_receive,
                             initargs=(aliases,)) as pool:
        batches = _batches(paths, size)
        for packed, spent in pool.map(_parse_packed, [str(root)] * len(batches), batches,
                                      [prepare is not None] * len(batches)):
            timings.merge(spent, elsewhere=True)
            for rows in _unpacked(packed):
                if prepare is not None and isinstance(rows.prepared, bytes):
                    rows = dataclasses.replace(rows, prepared=prepare(rows, rows.prepared, timings))
                yield rows


def build(
    conn: Connection, root: Path, paths: Iterable[Path | str], *, workers: int = 1,
    prepare: Prepare | None = None, consume: Consume | None = None, timings: Timings | None = None,
) -> SyncReport:
    """Make the graph hold exactly `paths`: parse changed files, drop files no longer listed.

    `prepare` (in the parser processes) and `consume` (here, in the same transaction) let a base
    index fill its search tables from the same pass over the files. `timings` collects each phase's
    time, the parser processes' included.
    """
    timings = timings if timings is not None else Timings()
    ensure_schema(conn)
    report = SyncReport()
    with timings.phase("file walk"):
        wanted, configs = _wanted(root, paths, report)
        aliases = _aliases(root, wanted, configs)
    rules = f"{ROWS_VERSION}:{aliases.digest()}"
    known = {row[0]: (row[1], row[2]) for row in conn.execute("SELECT path, content_hash, stale FROM files")}
    if known and _meta(conn, "graph.rows") != rules:  # made by rules that read files otherwise
        known = {}
    todo: list[str] = []
    for rel in wanted:
        stored = known.get(rel)
        if stored is not None and not stored[1] and stored[0] == content_hash((root / rel).read_bytes()):
            report.unchanged.append(rel)
        else:
            todo.append(rel)
    now = time.time()
    with conn:
        if not conn.in_transaction:
            conn.execute("BEGIN")  # so that DROP INDEX in a first build rolls back with the rest
        if not known:  # a first build, or one that reads every file again: no row of the last one stays
            for table in ("symbols", "relations", "files"):
                conn.execute(f"DELETE FROM {table}")
        parsed = _parse_all(root.resolve(), todo, workers, prepare, timings, aliases)
        if consume is not None:
            parsed = _consumed(parsed, consume)
        if not known:
            # the building process has a core of its own only when the parser processes leave one
            own_core = _pooled(todo, workers) and workers < (os.cpu_count() or 1)
            _bulk_load(conn, parsed, now, report, timings, index_after=not own_core)
        else:
            for rel in sorted(set(known) - set(wanted)):
                _remove(conn, rel)
                report.removed.append(rel)
            for rows in parsed:
                with timings.phase("graph writes"):
                    _record(conn, rows, now, report)
        _stamp(conn, root, now)
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('graph.rows', ?)", (rules,))
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('graph.aliases', ?)", (aliases.dumps(),))
        _note_left_out(conn, report.left_out)  # every left-out file is read again by each build
    report.unread_config = list(aliases.skipped)
    return report


def _wanted(root: Path, paths: Iterable[Path | str], report: SyncReport) -> tuple[list[str], list[str]]:
    """The listed files the graph holds, repository-relative (the rest of them in `report.left_out`),
    and the listed configuration files import aliases are read from."""
    resolver = _Resolver(os.path.realpath(root))
    listed = set()
    configs = []
    for path in paths:
        if extractor_for(os.fspath(path)) is not None:
            try:
                listed.add(resolver.relative(path))
            except ValueError:  # a link out of the checkout: what it points to is not read
                report.left_out[os.fspath(path)] = OUTSIDE
        if is_configuration(os.fspath(path)):  # by its name in the checkout (`aliases` reads it safely)
            rel = os.path.relpath(path, root).replace(os.sep, "/") if os.path.isabs(path) else os.fspath(path)
            if not rel.startswith("../"):
                configs.append(rel)
    # git lists deleted tracked files
    wanted = sorted(rel for rel in listed if os.path.isfile(os.path.join(root, rel)))
    report.left_out.update(marked(root, wanted))  # `.gitattributes`: generated, vendored, binary
    return [rel for rel in wanted if rel not in report.left_out] if report.left_out else wanted, configs


def _consumed(parsed: Iterable[FileRows], consume: Consume) -> Iterator[FileRows]:
    for rows in parsed:
        consume(rows)
        yield rows


def _bulk_load(
    conn: Connection, batches: Iterable[FileRows], now: float, report: SyncReport, timings: Timings,
    *, index_after: bool,
) -> None:
    """First build into empty tables.

    `index_after`: insert without indexes, then index once (about half the CPU). That is the right
    trade when this process also parses or the parser processes take every core; when they leave
    it a core, this process mostly waits for their rows, and keeping the indexes while inserting
    spends that wait instead of adding an indexing step after the last file (1.7 s of a 7 s build on
    sympy's 400,000 relations). On a machine whose other cores are busy the extra CPU slows the
    parser processes a little instead (sympy at load 1.3 on two cores: 9.4 s against 9.2 s); the
    1-minute load average, the one cheap signal, mostly shows the build's own recent past, so the
    choice does not depend on it.
    """
    indexes = [line for line in _SCHEMA.splitlines() if line.startswith("CREATE INDEX")]
    if index_after:
        for statement in indexes:
            conn.execute(f"DROP INDEX IF EXISTS {statement.split()[5]}")
    for rows in batches:
        if rows.left_out:
            report.left_out[rows.path] = rows.left_out
            continue
        with timings.phase("graph writes"):
            conn.executemany("INSERT INTO symbols VALUES (NULL,?,?,?,?,?,?,?,?,?,?,?,?)", rows.symbols)
            conn.executemany("INSERT INTO relations VALUES (NULL,?,?,?,?,?,?,?)", rows.relations)
            conn.execute(
                "INSERT INTO files VALUES (?, ?, ?, ?, ?)",
                (rows.path, rows.content_hash, rows.language, int(rows.has_errors), now),
            )
        _count(report, rows, written=True)
    if index_after:
        with timings.phase("indexes"):
            for statement in indexes:
                conn.execute(statement)


def sync_files(conn: Connection, root: Path, changed: Iterable[Path | str]) -> SyncReport:
    """Bring the listed files up to date: re-parse those whose content changed, drop deleted ones."""
    ensure_schema_once(conn)
    report = SyncReport()
    parsers = Parsers()
    base = os.path.realpath(root)
    inside = set()
    for path in changed:
        try:
            inside.add(_relative(base, path))
        except ValueError:  # a link out of the checkout (a repository can commit one): never read
            report.left_out[os.fspath(path)] = OUTSIDE
    # what the last build found marked in `.gitattributes` stays out (asking git per edit would cost
    # more than the re-sync itself)
    marks = {path: why for path, why in left_out_files(conn).items() if why.endswith(" in .gitattributes")}
    aliases: Aliases | None = None  # read from the last build's record when a file needs them
    for rel in sorted(inside):
        if rel in marks:
            with conn:
                _remove(conn, rel)
            report.left_out[rel] = marks[rel]
            continue
        extractor = extractor_for(rel)
        if extractor is None:
            continue  # not a language the graph holds
        full = root / rel
        if not full.is_file():
            with conn:
                _remove(conn, rel)
            report.removed.append(rel)
            continue
        why = left_out(full.stat().st_size)
        source = b"" if why else full.read_bytes()
        digest = content_hash(source)
        why = why or left_out(len(source), source)
        stored = conn.execute("SELECT content_hash, stale FROM files WHERE path = ?", (rel,)).fetchone()
        if stored is not None and stored[0] == digest and not why:  # (an empty file grown past the limit)
            (report.stale if stored[1] else report.unchanged).append(rel)
            continue
        if aliases is None:
            aliases = recorded_aliases(conn)
        rows = FileRows(rel, digest, extractor.language, False, [], [], left_out=why) if why else \
            extractor.read(rel, source, parsers.get(extractor).parse(source), digest, aliases)
        with conn:
            _record(conn, rows, time.time(), report)
    if report.parsed or report.stale or report.removed or report.left_out:
        with conn:
            _note_left_out(conn, report.left_out, read=[*report.parsed, *report.stale, *report.removed,
                                                         *report.left_out])
    return report


def _record(conn: Connection, rows: FileRows, now: float, report: SyncReport) -> None:
    if rows.left_out:  # it may have been source before: what the graph knew of it goes
        _remove(conn, rows.path)
        report.left_out[rows.path] = rows.left_out
        return
    _count(report, rows, written=write_file(conn, rows, now))


def _count(report: SyncReport, rows: FileRows, *, written: bool) -> None:
    if written:
        report.symbols += len(rows.symbols)
        report.relations += len(rows.relations)
    (report.stale if rows.has_errors else report.parsed).append(rows.path)
    if rows.failure:
        report.failed[rows.path] = rows.failure


def ensure_schema_once(conn: Connection) -> None:
    """Create the schema unless it exists: sync runs per edit and must stay cheap."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'relations'").fetchone() is None:
        ensure_schema(conn)


def by_these_rules(conn: Connection) -> bool:
    """Whether the graph of `conn` was made by this release's extraction rules (`ROWS_VERSION`)."""
    return _meta(conn, "graph.rows").startswith(f"{ROWS_VERSION}:")


def _meta(conn: Connection, key: str) -> str:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return str(row[0]) if row is not None else ""


def _aliases(root: Path, wanted: Sequence[str], configs: list[str]) -> Aliases:
    """What the imports of the checkout's sources name, from the configuration files the build's caller
    listed (`aliases.CONFIG_PATTERNS`: `forgebot index` lists every file, the service lists those)."""
    return read_aliases(root, configs, wanted) if wanted and configs else NO_ALIASES


# the aliases a sync read last, by the build's rules they were recorded with: a task's edits re-sync one
# file at a time, and a large monorepo's record (750 kB for 10,000 modules under `@/*`) would cost each
# edit its parse (1.7 ms, most of the 2 ms goal of a whole re-sync)
_last_read: tuple[str, Aliases] = ("", NO_ALIASES)


def recorded_aliases(conn: Connection) -> Aliases:
    """The aliases the last build of `conn`'s graph recorded (`aliases.Aliases`)."""
    global _last_read
    rules = _meta(conn, "graph.rows")
    if rules != _last_read[0] or not rules:
        _last_read = (rules, Aliases.loads(_meta(conn, "graph.aliases")))
    return _last_read[1]


def _stamp(conn: Connection, root: Path, now: float) -> None:
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('graph.built_at', ?)", (str(now),))
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('graph.repo', ?)", (root.resolve().name,))


def left_out_files(conn: Connection) -> dict[str, str]:
    """The checkout's files the index leaves out as not hand-written source, and why (`generated`)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
        return {}  # search tables without a graph (a test's, or an index made before the graph was)
    row = conn.execute("SELECT value FROM meta WHERE key = 'graph.left_out'").fetchone()
    return dict(json.loads(row[0])) if row is not None else {}


def _note_left_out(conn: Connection, left_out: dict[str, str], read: Iterable[str] = ()) -> None:
    """Record `left_out` as the files left out: all of them after a build; after a sync, the files it
    `read` are replaced by what it found of them and the rest stay."""
    read = set(read)
    if read:
        left_out = {**{p: why for p, why in left_out_files(conn).items() if p not in read}, **left_out}
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('graph.left_out', ?)", (json.dumps(left_out, sort_keys=True),))


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))

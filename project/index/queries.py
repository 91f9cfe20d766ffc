"""Code-graph queries: definition, callers, callees, impact, outline and batched explore.

Plain typed functions over an index connection and the checkout root, so the agent's tool layer and
the CLI wrap the same code. Each answer states whether the index was there and fresh for the files
the answer rests on (`results.IndexStatus`); without an index it answers `missing`, never "none".
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from project.index.bindings import defined, spellings
from project.index.bindings import definition as bound_definition
from project.index.db import Connection
from project.index.extractors import CONSTRUCTORS, EXTRACTORS, callable_from, caseless, extractor_for, same_name
from project.index.fixtures import fixture_sites
from project.index.hierarchy import ancestors, descendants, overridden, short_name, split_member
from project.index.parse import content_hash
from project.index.results import (
    MISSING,
    STALE_NOTE,
    CalleesResult,
    CallersResult,
    CallSiteHit,
    DefinitionResult,
    ExploreItem,
    ExploreResult,
    ImpactNode,
    ImpactResult,
    IndexStatus,
    OutlineResult,
    SymbolHit,
)
from project.index.store import recorded_aliases
from project.index.templates import template_sites

_SYMBOL_COLUMNS = "kind, fqn, path, start_line, end_line, signature, parent_fqn"
_SITE_COLUMNS = "path, line, source_fqn, target_name, target_fqn"
# the suffixes of the files the graph reads, for an answer saying which definitions it can hold
_LANGUAGES = ", ".join(suffix for extractor in EXTRACTORS for suffix in extractor.suffixes)
_MAX_NAMES = 2000  # target names one callers query asks for (subclasses times import bindings)


def index_ready(conn: Connection) -> bool:
    """True when a graph build has completed into this database."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
        return False
    return conn.execute("SELECT 1 FROM meta WHERE key = 'graph.built_at'").fetchone() is not None


def freshness(conn: Connection, root: Path, paths: Iterable[str]) -> IndexStatus:
    """Compare the files an answer rests on with the checkout: changed, deleted or broken is stale."""
    stale: list[str] = []
    for path in sorted(set(paths)):
        row = conn.execute("SELECT content_hash, stale FROM files WHERE path = ?", (path,)).fetchone()
        full = root / path
        if row is None or row[1] or not full.is_file() or content_hash(full.read_bytes()) != row[0]:
            stale.append(path)
    if stale:
        return IndexStatus(state="stale", stale_paths=stale, note=STALE_NOTE)
    return IndexStatus(state="ok")


def _repo(conn: Connection) -> str:
    row = conn.execute("SELECT value FROM meta WHERE key = 'graph.repo'").fetchone()
    return str(row[0]) if row is not None else ""


def _hit(row: tuple[object, ...], repo: str) -> SymbolHit:
    kind, fqn, path, start, end, signature, parent = row
    return SymbolHit(
        kind=str(kind), fqn=str(fqn), path=str(path), start_line=int(str(start)), end_line=int(str(end)),
        signature=str(signature), parent_fqn=str(parent), global_id=f"{repo}::{path}::{fqn}",
    )


def find_symbols(conn: Connection, name: str, limit: int = 50) -> list[SymbolHit]:
    """Exact fqn first (see `canonical`); otherwise by short name, narrowed by a `Class::member` owner."""
    wanted = name.strip().lstrip("\\")
    repo = _repo(conn)
    rows: list[tuple[object, ...]] = []
    for candidate in dict.fromkeys([wanted, canonical(conn, wanted)]):
        rows = [r for r in conn.execute(
            f"SELECT {_SYMBOL_COLUMNS} FROM symbols WHERE fqn = ? AND kind != 'namespace' LIMIT ?",
            (candidate, limit),
        ).fetchall() if same_name(str(r[2]), str(r[1]), candidate)]
        if rows:
            break
    if not rows:
        owner, member = split_member(wanted)
        rows = conn.execute(
            f"SELECT {_SYMBOL_COLUMNS} FROM symbols WHERE name = ? AND kind != 'namespace' "
            "ORDER BY fqn LIMIT ?",
            (short_name(member or owner).lstrip("$"), limit * 4),
        ).fetchall()
        if member:
            suffix = short_name(owner).lower()
            rows = [r for r in rows if short_name(str(r[6])).lower() == suffix]
        rows = rows[:limit]
    return [_hit(tuple(r), repo) for r in rows]


def definition(conn: Connection, root: Path, name: str) -> DefinitionResult:
    if not index_ready(conn):
        return DefinitionResult(query=name, status=MISSING)
    hits = find_symbols(conn, name)
    return DefinitionResult(query=name, status=freshness(conn, root, (h.path for h in hits)), symbols=hits)


def _sites(rows: Iterable[tuple[object, ...]], certainty: str) -> list[CallSiteHit]:
    return [
        CallSiteHit(path=str(p), line=int(str(ln)), caller=str(src), target_name=str(name),
                    target_fqn=str(target), certainty="resolved" if certainty == "resolved" else "by_name")
        for p, ln, src, name, target in rows
    ]


def canonical(conn: Connection, name: str, *, python_name: bool = True) -> str:
    """The definition `name` means: itself, its dotted form read as a member (`pkg.mod.Class.method` is
    `pkg.mod.Class::method`), or the definition an import binding it leads to (for a member, its class's);
    failing those, the one definition a short name can mean (`only_definition`); `name` when none is
    known. `python_name`: it may be a name as a Python project below the root imports it (read so once:
    Django's `mysite/mysite/` maps `mysite` to `mysite.mysite`, again and again)."""
    found = _read(conn, name, python_name)
    if found == name.strip().lstrip("\\") and not defined(conn, found):
        return only_definition(conn, found) or found
    return found


def only_definition(conn: Connection, name: str) -> str:
    """The definition a short name means when exactly one carries it: `Ledger::close`, `Ledger.close` (the
    spelling of Python and TypeScript) or `close` for `billing.refunds.Ledger::close`; "" when none or
    several do (an answer's note then lists them), and for a qualified name (`src/carts:Cart::save`,
    `App\\Cart::save`), whose qualifier may name what the graph does not hold. A user and a model both
    write the short form first; answering for the one definition it can mean saves the round trip."""
    owner, member = split_member(name.strip())
    if not member and "." in owner:
        owner, _, member = owner.rpartition(".")
    if not owner.isidentifier() or member and not member.lstrip("$").isidentifier():
        return ""
    asked = (member or owner).lstrip("$")
    if member:  # the classes named `owner`, then their members named `member` (not every `close` of the graph)
        owners = [str(fqn) for path, fqn, stored in conn.execute(
            "SELECT path, fqn, name FROM symbols WHERE name = ? AND kind IN ('class', 'interface', 'trait', 'enum')",
            (owner,)) if same_name(str(path), str(stored), owner)]
        marks = ",".join("?" * len(owners))
        rows = conn.execute(f"SELECT path, fqn, name FROM symbols WHERE name = ? AND parent_fqn IN ({marks})",
                            (asked, *owners)).fetchall() if owners else []
    else:  # a bare name is the one definition only if a second is not found
        rows = conn.execute("SELECT path, fqn, name FROM symbols WHERE name = ? "
                            "AND kind NOT IN ('namespace', 'module') LIMIT 16", (asked,)).fetchall()
    fqns = {str(fqn) for path, fqn, stored in rows if same_name(str(path), str(stored), asked)}
    return fqns.pop() if len(fqns) == 1 else ""


def _read(conn: Connection, name: str, python_name: bool) -> str:
    wanted = name.strip().lstrip("\\")
    head, dot, tail = wanted.rpartition(".")
    if dot and head and "::" not in wanted and not defined(conn, wanted):
        if defined(conn, f"{head}::{tail}"):
            return f"{head}::{tail}"
        owner = canonical(conn, head, python_name=python_name)  # a re-exported class's method: `shop.Cart.save`
        if owner != head and defined(conn, f"{owner}::{tail}"):
            return f"{owner}::{tail}"
    owner, member = split_member(wanted)
    if member and not defined(conn, wanted):  # a member of a class named as it is re-exported
        return f"{canonical(conn, owner)}::{member}"
    found = bound_definition(conn, wanted)
    if python_name and found == wanted and not defined(conn, wanted):  # a project's name for it
        top = wanted.split(".", 1)[0]
        graph = recorded_aliases(conn).python_module("", top) if top != wanted else ""
        # `app.crud.create_user` in backend/ is the graph's `backend.app.crud.create_user`
        mapped = canonical(conn, f"{graph}{wanted[len(top):]}", python_name=False) if graph else ""
        if mapped and defined(conn, mapped):
            return mapped
    return found


def call_sites(conn: Connection, fqn: str, limit: int = 200) -> tuple[list[CallSiteHit], bool]:
    """Sites calling `fqn` (resolved through subclasses and import bindings too) or handing it over as a
    value for another function to call (`references`: `map(fmt, xs)`, `el.addEventListener("click",
    this.onClick)`, matched by their exact target only), plus unresolved calls with its name."""
    target = canonical(conn, fqn)
    names = []
    if "::" not in target:
        row = conn.execute("SELECT path FROM symbols WHERE fqn = ? AND kind IN ('class', 'enum') LIMIT 1",
                           (target,)).fetchone()
        extractor = extractor_for(str(row[0])) if row is not None else None
        if extractor is not None:  # the callers of a class are the sites that instantiate it
            names.append(short_name(target))  # `Foo()` / `new Foo()` left unresolved
            target += f"::{extractor.constructor}"
    owner, member = split_member(target)
    # the definition's file: its language says which calls can name it (`_scope_name`, `callable_from`)
    row = conn.execute("SELECT path FROM symbols WHERE fqn IN (?, ?) LIMIT 1", (target, owner)).fetchone()
    path = str(row[0]) if row is not None else ""
    if member:
        owners = [name for o in [owner, *descendants(conn, owner)] for name in spellings(conn, o)]
        exact = [f"{o}::{member}" for o in owners][:_MAX_NAMES]
        names.insert(0, member)
        scope = _scope_name(conn, owner, member, path)
        if scope:  # Eloquent's local scope: `Post::published()` and `$query->published()` call it
            exact += [f"{o}::{scope}" for o in owners][:_MAX_NAMES]
            names.append(scope)
        exact += [f"{name}.{member}" for name in _instances(conn, owners)][:_MAX_NAMES]
    else:
        exact = spellings(conn, target)[:_MAX_NAMES]
        names.insert(0, short_name(target))
    marks = ",".join("?" * len(exact))
    # `fallback_fqn != ''` lets SQLite use the partial index on it: without it, an OR it cannot index
    # made every callers query a scan of the whole table (130 ms on sympy's 400,000 rows; 0.3 ms with it)
    rows = conn.execute(
        f"SELECT {_SITE_COLUMNS}, fallback_fqn FROM relations WHERE kind IN ('calls', 'references') "
        f"AND (target_fqn IN ({marks}) OR (fallback_fqn IN ({marks}) AND fallback_fqn != '' "
        "AND NOT EXISTS (SELECT 1 FROM symbols s WHERE s.fqn = relations.target_fqn "
        "AND s.kind IN ('function', 'method')))) ORDER BY path, line LIMIT ?",
        (*exact, *exact, limit + 1),
    ).fetchall()
    # the columns compare without case, as PHP names do; a call from a file of a language that tells
    # `save` from `Save` (a handler and a React component of one module) names only the one it spells
    spelled = set(exact)
    resolved = _sites([row[:5] for row in rows if row[4] in spelled or row[5] in spelled
                       or caseless(str(row[0]))], "resolved")
    # every class has a constructor: a call left unresolved by that name (`super(…)` of a base the graph
    # cannot see) is no more a call of this class's than of any other
    names = [name for name in names if name not in CONSTRUCTORS]
    marks = ",".join("?" * len(names))
    # a PHP method is not called by name from JavaScript: only files of the definition's language family
    suffixes = callable_from(path)
    within = f" AND ({' OR '.join('path GLOB ?' for _ in suffixes)})" if suffixes else ""
    loose = conn.execute(  # `+`: by the name's index, not the empty target's (every unresolved call)
        f"SELECT {_SITE_COLUMNS} FROM relations WHERE kind = 'calls' AND target_name IN ({marks}) "
        f"AND +target_fqn = ''{within} ORDER BY path, line LIMIT ?",
        (*names, *(f"*{suffix}" for suffix in suffixes), limit + 1),
    ).fetchall()
    sites = resolved + _sites(loose, "by_name")
    return sites[:limit], len(sites) > limit


def _instances(conn: Connection, classes: list[str]) -> list[str]:
    """The names, and every name imports bind to them, of the modules' instances of `classes`
    (`export const api = new ApiClient()`): `api.get()` in a module importing it calls `ApiClient::get`."""
    marks = ",".join("?" * len(classes))
    held = conn.execute("SELECT DISTINCT source_fqn FROM relations WHERE kind = 'instance' "
                        f"AND target_fqn IN ({marks}) LIMIT ?", (*classes, _MAX_NAMES)).fetchall()
    return [name for (instance,) in held for name in spellings(conn, str(instance))][:_MAX_NAMES]


def _scope_name(conn: Connection, owner: str, member: str, path: str) -> str:
    """The name Laravel's Eloquent calls a PHP model's local scope by (`scopePublished` is `published()`,
    on the model or a query of it), "" for any other member, another language's (`path` is the
    definition's file) or when the class defines that name itself."""
    if len(member) < 6 or not member.startswith("scope") or not member[5].isupper():
        return ""
    extractor = extractor_for(path)
    scope = member[5].lower() + member[6:]
    if extractor is None or extractor.language != "php" or defined(conn, f"{owner}::{scope}"):
        return ""
    return scope


def framework_sites(conn: Connection, root: Path, target: str) -> list[CallSiteHit]:
    """Where a framework calls `target` from a use no call expression makes: an Angular component's
    template (read from the checkout as it is now; the graph holds no HTML), the tests and fixtures that
    request a pytest fixture by naming it as a parameter."""
    return template_sites(conn, root, target) + fixture_sites(conn, target)


def callers(conn: Connection, root: Path, fqn: str, limit: int = 200) -> CallersResult:
    if not index_ready(conn):
        return CallersResult(query=fqn, status=MISSING)
    sites, truncated = call_sites(conn, fqn, limit)
    status = named_status(conn, fqn, freshness(conn, root, (s.path for s in sites)))
    target = canonical(conn, fqn)
    sites += framework_sites(conn, root, target)[:max(0, limit - len(sites))]
    if not sites and not status.note:  # a definition nothing names: not the same as one nothing uses
        note = _unnamed(conn, target)
        status = status.model_copy(update={"note": note})
    return CallersResult(query=fqn, status=status, sites=sites, truncated=truncated)


def _unnamed(conn: Connection, target: str) -> str:
    """What an empty list of callers leaves open. A model reading "no callers" as "unused" deletes a
    controller action a framework's configuration maps, an interface's implementation, a handler
    registered by a name built at run time: the answer says where the calls it cannot see come from."""
    above = [fqn for fqn, _ in overridden(conn, target)][:5]
    if above:
        return (f"no call site names {target}; it overrides or implements {', '.join(above)}: calls made "
                "through that type reach it, ask for their callers")
    marks = _marks(conn, target)
    if marks:  # `@router.get("/items")`, `#[Route('/cart')]`, `@Get()`: registered where it is defined
        return (f"no call site names {target}; it is marked {', '.join(marks[:5])} (a decorator "
                "or attribute): what registers it that way, a framework's routes, tasks or events, calls it")
    search = f"search the code for {short_name(target)!r} before treating it as unused"
    owner, member = split_member(target)
    outside = [a for a in ancestors(conn, owner) if not defined(conn, a)
               and member.lower() in _CORE_MEMBERS.get(a.lower(), (member.lower(),))][:3] if member else []
    if outside:  # Django's `BaseCommand.handle`, Angular's `OnInit.ngOnInit`: the framework calls the override
        return (f"no call site names {target}; its class extends or implements {', '.join(outside)}, "
                "outside the repository: where this method overrides or implements one of theirs, code "
                f"there calls it (a framework's hook, a command's handler); else {search}")
    marks = _marks(conn, owner) if member else []
    if marks:  # `@Injectable() export class Cart`: a container makes it, a component's hooks are called
        return (f"no call site names {target}; its class is marked {', '.join(marks[:5])} (a decorator or "
                "attribute): where that registers the class with a framework (a container, components, "
                "routes), the framework creates it and can call this method (its constructor, a lifecycle "
                f"hook such as ngOnInit), which no line of the repository shows; else {search}")
    return (f"no call site names {target} in the code the graph reads; it can still be reached by a name "
            "built at run time, a framework's configuration (routes, hooks, a container, templates) or code "
            f"outside the repository: {search}")


# PHP's own interfaces, whose methods are known: `Shape extends Countable` says nothing of `rename`
_CORE_MEMBERS = {
    "countable": ("count",), "arrayaccess": ("offsetexists", "offsetget", "offsetset", "offsetunset"),
    "iteratoraggregate": ("getiterator",), "iterator": ("current", "key", "next", "rewind", "valid"),
    "traversable": (), "jsonserializable": ("jsonserialize",), "stringable": ("__tostring",),
    "serializable": ("serialize", "unserialize"), "throwable": (), "unitenum": ("cases",),
    "backedenum": ("cases", "from", "tryfrom"),
}


def _marks(conn: Connection, fqn: str) -> list[str]:
    """The decorators or attributes of a definition, by name."""
    row = conn.execute("SELECT attributes FROM symbols WHERE fqn = ? LIMIT 1", (fqn,)).fetchone()
    return [str(mark) for mark in json.loads(str(row[0]))] if row is not None and str(row[0]).startswith("[") else []


def named_status(conn: Connection, fqn: str, status: IndexStatus) -> IndexStatus:
    """`status`, noting when no definition carries `fqn`: an empty answer then says nothing about the
    code (a name misspelled, in another form, or in a language the graph does not read), and a model
    that reads "no callers" as a fact would conclude from it."""
    target = canonical(conn, fqn)
    owner, member = split_member(target)
    if defined(conn, target) or member and defined(conn, owner):  # a member may be inherited
        asked = fqn.strip().lstrip("\\")
        if target != asked and only_definition(conn, asked) == target:
            note = f"{asked!r} read as {target}, the one definition of that name"
            return status.model_copy(update={"note": f"{status.note}; {note}" if status.note else note})
        return status
    others = [hit.fqn for hit in find_symbols(conn, fqn, limit=8)]
    named = f"definitions with that name: {', '.join(others)}" if others else "none has that name either"
    note = (f"no definition is named {fqn!r} ({named}); the graph holds definitions of {_LANGUAGES} files, "
            "in the forms `forgebot symbols` lists; search the code for other names")
    return status.model_copy(update={"note": f"{status.note}; {note}" if status.note else note})


def callee_sites(conn: Connection, fqn: str) -> list[CallSiteHit]:
    """Calls made from the body of `fqn`; resolved targets first."""
    rows = conn.execute(
        f"SELECT {_SITE_COLUMNS} FROM relations WHERE kind = 'calls' AND source_fqn = ? ORDER BY path, line",
        (fqn.strip().lstrip("\\"),),
    ).fetchall()
    return _sites([r for r in rows if r[4]], "resolved") + _sites([r for r in rows if not r[4]], "by_name")


def callees(conn: Connection, root: Path, fqn: str) -> CalleesResult:
    if not index_ready(conn):
        return CalleesResult(query=fqn, status=MISSING)
    sites = callee_sites(conn, canonical(conn, fqn))  # a re-exported name, a Python project's own name
    return CalleesResult(query=fqn, status=named_status(conn, fqn, freshness(conn, root, {s.path for s in sites})),
                         sites=sites)


def outline(conn: Connection, root: Path, path: str, limit: int | None = None) -> OutlineResult:
    """A file's definitions in source order, with signatures: a map of a file too large to read.

    The first `limit` of them (all by default, as `forgebot outline` prints); `more` counts the rest.
    """
    if not index_ready(conn):
        return OutlineResult(path=path, status=MISSING)
    repo = _repo(conn)
    rows = conn.execute(
        f"SELECT {_SYMBOL_COLUMNS} FROM symbols WHERE path = ? ORDER BY start_line, start_byte", (path,)
    ).fetchall()
    shown = rows if limit is None else rows[:limit]
    hits = [_hit(tuple(r), repo) for r in shown]
    return OutlineResult(path=path, status=freshness(conn, root, [path]), symbols=hits, more=len(rows) - len(shown))


def impact(conn: Connection, root: Path, fqn: str, depth: int = 2, limit: int = 300) -> ImpactResult:
    """Reverse k-hop: who calls, extends, implements or uses `fqn`, then who depends on those."""
    if not index_ready(conn):
        return ImpactResult(query=fqn, depth=depth, status=MISSING)
    seen: dict[str, ImpactNode] = {}
    frontier = [canonical(conn, fqn)]
    for distance in range(1, max(1, depth) + 1):
        following: list[str] = []
        for current in frontier:
            for node in _dependents(conn, root, current, distance, limit):
                key = node.fqn.lower() or f"{node.path}:{node.line}"
                if key not in seen and len(seen) < limit:
                    seen[key] = node
                    if node.fqn and node.certainty == "resolved":  # name-only guesses are not expanded
                        following.append(node.fqn)
        frontier = following
    nodes = list(seen.values())
    # a template is read as it is now: only the graph's own files can be stale
    status = named_status(conn, fqn, freshness(conn, root, {n.path for n in nodes if extractor_for(n.path)}))
    return ImpactResult(query=fqn, depth=depth, status=status, nodes=nodes, truncated=len(seen) >= limit)


def _dependents(conn: Connection, root: Path, fqn: str, distance: int, limit: int) -> list[ImpactNode]:
    sites, _ = call_sites(conn, fqn, limit)
    sites += framework_sites(conn, root, fqn)
    nodes = [
        ImpactNode(fqn=s.caller, distance=distance, relation="calls", path=s.path, line=s.line,
                   certainty=s.certainty)
        for s in sites
    ]
    owner, member = split_member(fqn)
    if member:
        nodes.extend(_overriders(conn, owner, member, distance))
    elif (path := _module_path(conn, fqn)) is not None:
        nodes.extend(_importers(conn, fqn, path, distance, limit))
    else:
        names = spellings(conn, bound_definition(conn, fqn))
        marks = ",".join("?" * len(names))
        rows = conn.execute(
            f"SELECT kind, source_fqn, path, line FROM relations WHERE target_fqn IN ({marks}) "
            "AND kind IN ('extends', 'implements', 'uses_trait') ORDER BY path, line",
            names,
        ).fetchall()
        nodes.extend(
            ImpactNode(fqn=str(src), distance=distance, relation=kind, path=str(p), line=int(ln),
                       certainty="resolved")
            for kind, src, p, ln in rows
        )
    return nodes


def _module_path(conn: Connection, fqn: str) -> str | None:
    """The file of the module `fqn`, None when `fqn` is no module."""
    row = conn.execute("SELECT path FROM symbols WHERE fqn = ? AND kind = 'module' LIMIT 1", (fqn,)).fetchone()
    return str(row[0]) if row is not None else None


def _importers(conn: Connection, module: str, path: str, distance: int, limit: int) -> list[ImpactNode]:
    """The modules that import `module` (the file `path`) or a name of it (`import Cart from "./Cart.vue"`,
    `from shop.cart import Cart`): who is touched when a file changes as a whole. A Vue or Svelte component
    is its module, and the files using it import it; without this `impact` of a component answered nothing.
    A name of it is `module:name` in TypeScript and JavaScript, `module.name` in Python (where a name
    after a dot may also be a submodule, which depends on it as well)."""
    extractor = extractor_for(path)
    separator = "." if extractor is not None and extractor.language == "python" else ":"
    after = chr(ord(separator) + 1)  # every `module<separator>…` sorts between the two
    rows = conn.execute(
        "SELECT DISTINCT r.path, r.line, m.fqn FROM relations r LEFT JOIN symbols m ON m.path = r.path "
        "AND m.kind = 'module' WHERE r.kind = 'imports' AND r.path != ? AND (r.target_fqn = ? "
        "OR (r.target_fqn > ? AND r.target_fqn < ?)) ORDER BY r.path, r.line LIMIT ?",
        (path, module, f"{module}{separator}", f"{module}{after}", limit),
    ).fetchall()
    found: dict[str, ImpactNode] = {}
    for importer_path, line, importer in rows:  # one node per importing file, at its first import of it
        found.setdefault(str(importer_path), ImpactNode(
            fqn=str(importer or ""), distance=distance, relation="imports", path=str(importer_path), line=int(line),
            certainty="resolved"))
    return list(found.values())


def _overriders(conn: Connection, owner: str, member: str, distance: int) -> list[ImpactNode]:
    """Methods of subclasses (and trait users) that override `owner::member`: they share its contract."""
    found: list[ImpactNode] = []
    for subclass in descendants(conn, owner):
        row = conn.execute(
            "SELECT fqn, path, start_line FROM symbols WHERE fqn = ? AND kind = 'method'",
            (f"{subclass}::{member}",),
        ).fetchone()
        if row is not None:
            fqn, path, line = str(row[0]), str(row[1]), int(row[2])
            found.append(ImpactNode(fqn=fqn, distance=distance, relation="overrides", path=path, line=line,
                                    certainty="resolved"))
    return found


def explore(conn: Connection, root: Path, names: list[str], per_symbol: int = 20) -> ExploreResult:
    """Several symbols in one call: definitions, callers and callees of each, one freshness check."""
    if not index_ready(conn):
        return ExploreResult(status=MISSING)
    items: list[ExploreItem] = []
    paths: set[str] = set()
    for name in names:
        hits = find_symbols(conn, name, limit=5)
        target = hits[0].fqn if len(hits) == 1 else name
        sites, truncated = call_sites(conn, target, per_symbol)
        outgoing = callee_sites(conn, target)[:per_symbol] if hits else []
        paths.update(h.path for h in hits)
        paths.update(s.path for s in sites)
        items.append(ExploreItem(query=name, definitions=hits, callers=sites, callees=outgoing,
                                 callers_truncated=truncated))
    return ExploreResult(status=freshness(conn, root, paths), items=items)

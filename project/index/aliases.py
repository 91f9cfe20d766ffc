"""Module specifiers a repository maps to its own files: TypeScript `paths` and workspace packages.

`import { h } from "@vue/runtime-core"` names no file by its spelling. The checkout says where it is:
its tsconfig.json maps `@vue/*` to `packages/*/src`, or a package.json in it is named
`@vue/runtime-core`. Without reading those, every import of a monorepo's own packages (and every
`@/components/x` of an application) led nowhere, and the callers of a function called through them
were not found: on vuejs/core, 43% of the calls the extractor could tie to an import.

What is read, as TypeScript and the package managers read it:
- every `tsconfig.json` and `jsconfig.json` of the checkout: `compilerOptions.paths` (relative to
  `baseUrl`, else to the file that sets `paths`), merged over the files `extends` names inside the
  checkout; it applies to the files under its directory, the nearest one winning, an exact pattern
  before a wildcard one, the longer prefix first, each pattern's targets in order, then (with a
  `baseUrl`) the specifier as a path under `baseUrl`;
- a SvelteKit project (a directory holding `svelte.config.js`): `$lib` and `$lib/*` are its `src/lib`,
  as the `.svelte-kit/tsconfig.json` it generates maps them, unless its own tsconfig.json does;
- every `package.json` (none under `node_modules`) with a `name`: the package's entry is its
  `src/index`, else its `index`, else the file `source`, `module`, `main` or `types` names, when that
  file is in the checkout; `name/sub` is the module `sub` of its directory (below the root).

A specifier maps only to a module the checkout holds; anything else stays as written (an external
package). The answer is computed here once per build, for every module of the checkout, so the
extractor's lookup is one dictionary access. Configuration files are untrusted: each is read only
when it is a regular file inside the checkout under `MAX_CONFIG_BYTES`, JSON with comments and
trailing commas as TypeScript allows; one that cannot be read adds nothing and is named in `skipped`.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from project.index.extractors import extractor_for
from project.index.python_graph import module_name as python_module_name
from project.index.script_graph import module_name

MAX_CONFIG_BYTES = 1 << 20
MAX_CONFIGS = 2_000  # tsconfig, jsconfig and package.json files read per checkout
MAX_PATTERNS = 1_000  # `paths` entries per configuration
MAX_EXPORTED = 10_000  # subpaths one package.json `exports` map names (a `./*` names a module each)
_EXTENDS_DEPTH = 8
_CONFIG_NAMES = frozenset({"tsconfig.json", "jsconfig.json"})
# a Python project's directory holds one of these (present, never read): its packaging, or, for an
# application run from its own directory, its dependency list or Django's `manage.py`
_PROJECTS = frozenset({"pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile", "manage.py"})
# a SvelteKit project's directory holds one (JavaScript, never read): its `$lib` is `src/lib`, as the
# `.svelte-kit/tsconfig.json` SvelteKit generates (never committed) maps it
_SVELTEKIT = frozenset({"svelte.config.js", "svelte.config.ts", "svelte.config.mjs"})
_SVELTEKIT_PATHS = (("$lib", ("src/lib",)), ("$lib/*", ("src/lib/*",)))
_NAMES = _CONFIG_NAMES | _PROJECTS | _SVELTEKIT | {"package.json"}
_ENTRY_FIELDS = ("source", "module", "main", "types", "typings")
_EXTENSION = re.compile(r"(\.[A-Za-z0-9]+)*")
T = TypeVar("T")


@dataclass(frozen=True)
class Aliases:
    """What non-relative imports name in one checkout: for scripts, a specifier → module map per
    configuration directory (the nearest one to the importing file applies), then the workspace
    packages'; for Python, the top-level packages of each project below the checkout's root."""

    # (directory, its map in `maps`), the deepest directory first: the configurations of a monorepo's
    # packages mostly extend one base, and share its map (400 packages: one map, not 400 copies)
    scoped: tuple[tuple[str, int], ...] = ()
    maps: tuple[dict[str, str], ...] = ()  # specifier → module
    packages: dict[str, str] = field(default_factory=dict)
    # (a Python project's directory, its top-level names → their modules in the graph), the deepest first
    python: tuple[tuple[str, dict[str, str]], ...] = ()
    skipped: tuple[str, ...] = ()  # configuration files not read, each with why
    _scopes: dict[str, int] = field(init=False, repr=False, compare=False, default_factory=dict)
    _projects: dict[str, dict[str, str]] = field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        # by directory, for a lookup per import that walks up the importer's directories (a monorepo
        # has hundreds of configurations; a scan of them per import was the cost of a whole extraction)
        object.__setattr__(self, "_scopes", dict(self.scoped))
        object.__setattr__(self, "_projects", dict(self.python))

    def resolve(self, importer: str, specifier: str) -> str:
        """The module `specifier` names from the file `importer`, or "" when the checkout maps it nowhere."""
        index = _nearest(self._scopes, importer)
        if index is not None:  # the nearest configuration is the one that applies
            mapped = self.maps[index]
            found = mapped.get(specifier) or mapped.get(module_name(specifier))
            if found:
                return found
        return self.packages.get(specifier) or self.packages.get(module_name(specifier)) or ""

    def python_module(self, importer: str, name: str) -> str:
        """The graph's module for the top-level `name` an absolute import in `importer` names (`app` in
        `backend/app/main.py` is `backend.app` when backend/ holds a pyproject.toml), or ""."""
        own = _nearest(self._projects, importer, root=False)
        if own is not None:
            return own.get(name, "")  # the importing file's own project
        # outside every project: when only one has it (the checkout's top level counts as one, under "")
        found = [mapped[name] for _, mapped in self.python if name in mapped]
        return found[0] if len(found) == 1 and found[0] != name else ""

    def digest(self) -> str:
        """Changes when any import would map otherwise: the rows of every file depend on it."""
        return hashlib.sha1(self.dumps().encode(), usedforsecurity=False).hexdigest()[:16] if self else ""

    def dumps(self) -> str:
        return json.dumps({"scoped": self.scoped, "maps": self.maps, "packages": self.packages,
                           "python": self.python, "skipped": self.skipped}, sort_keys=True, separators=(",", ":"))

    @classmethod
    def loads(cls, text: str) -> Aliases:
        """The aliases `dumps` wrote; none from a record this release cannot read (the next build
        writes it again: its digest is part of the rules a build compares)."""
        try:
            return cls._loads(text)
        except (ValueError, TypeError, AttributeError, IndexError):
            return NO_ALIASES

    @classmethod
    def _loads(cls, text: str) -> Aliases:
        data = json.loads(text) if text else {}
        return cls(tuple((str(d), int(i)) for d, i in data.get("scoped", ())),
                   tuple(dict(m) for m in data.get("maps", ())), dict(data.get("packages", {})),
                   tuple((str(d), dict(m)) for d, m in data.get("python", ())), tuple(data.get("skipped", ())))

    def __bool__(self) -> bool:
        return bool(self.scoped or self.packages or self.python)


def _nearest(by_directory: dict[str, T], path: str, *, root: bool = True) -> T | None:
    """The value of the deepest directory holding `path` (the checkout's root "" too, when `root`)."""
    directory = posixpath.dirname(path)
    while directory:
        if directory in by_directory:
            return by_directory[directory]
        directory = posixpath.dirname(directory)
    return by_directory.get("") if root else None


NO_ALIASES = Aliases()
# `git ls-files`-style patterns of the files read here (a build takes them from its caller's list)
CONFIG_PATTERNS = ("*tsconfig.json", "*jsconfig.json", "*package.json",
                   *(f"*{name}" for name in sorted(_PROJECTS | _SVELTEKIT)))


def is_configuration(rel: str) -> bool:
    """Whether the repository-relative `rel` is a file the aliases are read from."""
    return rel.rsplit("/", 1)[-1] in _NAMES and not (rel.startswith("node_modules/") or "/node_modules/" in rel)


def read_aliases(root: Path, files: Iterable[str], sources: Iterable[str]) -> Aliases:
    """The aliases of the checkout at `root`, from its listed configuration `files` and its `sources`
    (both repository-relative): what their imports can name."""
    sources = list(sources)
    known = _Modules(module for rel in sources
                     if (extractor := extractor_for(rel)) is not None and extractor.module_of is not None
                     for module in (extractor.module_of(rel),))
    configs: list[str] = []
    manifests: list[str] = []
    projects: list[str] = []
    sveltekit: set[str] = set()
    for rel in filter(is_configuration, files):
        name = rel.rsplit("/", 1)[-1]
        if name in _SVELTEKIT:
            sveltekit.add(posixpath.dirname(rel))
            continue
        (manifests if name == "package.json" else projects if name in _PROJECTS else configs).append(rel)
    python = _python_projects(projects, [rel for rel in sources if rel.endswith(".py")])
    if not known.names:
        return Aliases(python=python)
    reader = _Reader(root)
    scoped = []
    maps: dict[tuple[tuple[str, tuple[str, ...]], ...], int] = {}  # patterns → their map's index
    expanded: list[dict[str, str]] = []
    # a SvelteKit project without a tsconfig.json of its own still has its `$lib`
    configs += [posixpath.join(directory, "tsconfig.json") for directory in sveltekit
                if posixpath.join(directory, "tsconfig.json") not in configs]
    for rel in sorted(configs)[:MAX_CONFIGS]:
        found = _paths(reader, rel)
        if posixpath.dirname(rel) in sveltekit:
            found = _sveltekit(found, posixpath.dirname(rel))
        patterns = tuple((pattern, tuple(targets)) for pattern, targets in found)
        if patterns and patterns not in maps:
            maps[patterns] = len(expanded)
            expanded.append(_expand(patterns, known))
        if patterns and expanded[maps[patterns]]:
            scoped.append((posixpath.dirname(rel), maps[patterns]))
    scoped.sort(key=lambda item: -len(item[0]) if item[0] else 1)  # deepest first, the root last
    packages: dict[str, str] = {}
    for rel in sorted(manifests)[:MAX_CONFIGS]:
        packages.update(_package(reader, rel, known, packages))
    return Aliases(tuple(scoped), tuple(expanded), packages, python, tuple(reader.skipped))


def _python_projects(markers: list[str], files: list[str]) -> tuple[tuple[str, dict[str, str]], ...]:
    """Each directory below the root holding a `_PROJECTS` file, with the top-level modules and packages
    of the project there (its files, in `src/` or not) named as the graph names them. Only a name the
    graph spells otherwise than Python does is kept (`backend.app` for `app`). A file belongs to the
    deepest project holding it. A name the checkout's own top level holds too is listed under "" as
    itself: an import of it from outside every project names the top level's (`utils` beside a
    `scripts/requirements.txt` and a `scripts/utils.py`), not the project's."""
    directories = {posixpath.dirname(m) for m in markers if "/" in m}
    found: dict[str, dict[str, str]] = {}
    top_level: set[str] = set()
    for rel in files if directories else ():
        directory = posixpath.dirname(rel)
        while directory and directory not in directories:
            directory = posixpath.dirname(directory)
        if not directory:
            top_level.add(python_module_name(rel).split(".", 1)[0])
            continue
        graph, python = python_module_name(rel), python_module_name(rel[len(directory) + 1:])
        if graph != python and graph.endswith(f".{python}"):
            top = python.split(".", 1)[0]
            found.setdefault(directory, {}).setdefault(top, graph[:len(graph) - len(python)] + top)
    shared = sorted(top_level & {name for mapped in found.values() for name in mapped})
    if shared:
        found[""] = {name: name for name in shared}
    return tuple(sorted(found.items(), key=lambda item: -len(item[0])))


class _Reader:
    """Reads configuration files of the checkout, refusing what is not one of its regular files."""

    def __init__(self, root: Path) -> None:
        self.root = os.path.realpath(root)
        self.skipped: list[str] = []

    def json(self, rel: str) -> dict[str, object] | None:
        full = os.path.realpath(os.path.join(self.root, rel))
        if not full.startswith(self.root + os.sep):
            self.skipped.append(f"{rel}: a link to outside the checkout")
            return None
        try:
            if not os.path.isfile(full):
                return None
            if os.path.getsize(full) > MAX_CONFIG_BYTES:
                self.skipped.append(f"{rel}: over {MAX_CONFIG_BYTES} bytes")
                return None
            with open(full, "rb") as handle:
                data = json.loads(_plain_json(handle.read(MAX_CONFIG_BYTES + 1).decode("utf-8", "replace")))
        except (OSError, ValueError, RecursionError) as exc:
            self.skipped.append(f"{rel}: {type(exc).__name__}: {str(exc)[:120]}")
            return None
        return data if isinstance(data, dict) else None


_COMMENTS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?(?:\*/|\Z)', re.S)
_TRAILING_COMMAS = re.compile(r'"(?:[^"\\\n]|\\.)*"|,(?=\s*[}\]])')


def _strings(match: re.Match[str]) -> str:
    return match.group(0) if match.group(0).startswith('"') else ""


def _plain_json(text: str) -> str:
    """JSON as TypeScript writes its configuration (comments, trailing commas) made plain JSON."""
    return _TRAILING_COMMAS.sub(_strings, _COMMENTS.sub(_strings, text.lstrip("\ufeff")))


def _paths(reader: _Reader, rel: str) -> list[tuple[str, list[str]]]:
    """The `paths` patterns of one configuration (its `extends` chain merged), with targets made
    repository-relative; ordered as TypeScript tries them."""
    options: dict[str, object] = {}
    where: dict[str, str] = {}  # the directory each option was set in
    for path, data in reversed(_chain(reader, rel)):  # the base first, each file's own options over it
        compiler = data.get("compilerOptions")
        if isinstance(compiler, dict):
            for key in ("baseUrl", "paths"):
                if key in compiler:
                    options[key] = compiler[key]
                    where[key] = posixpath.dirname(path)
    paths = options.get("paths")
    base_url = options.get("baseUrl")
    if isinstance(base_url, str):
        base = posixpath.normpath(posixpath.join(where["baseUrl"], base_url))
        # a bare specifier is also looked for under `baseUrl`, after every `paths` pattern
        paths = {"*": ["*"], **(paths if isinstance(paths, dict) else {})}
    elif isinstance(paths, dict):
        base = where["paths"]
    else:
        return []
    patterns = []
    for pattern, targets in list(paths.items())[:MAX_PATTERNS]:
        if not isinstance(pattern, str) or pattern.count("*") > 1 or not isinstance(targets, list):
            continue
        joined = [posixpath.normpath(posixpath.join(base, t)) for t in targets
                  if isinstance(t, str) and t.count("*") <= 1]
        inside = [t for t in joined if t != ".." and not t.startswith(("../", "/"))]
        if inside:
            patterns.append((pattern, inside))
    patterns.sort(key=_tried_first)
    return patterns


def _tried_first(pattern: tuple[str, list[str]]) -> tuple[bool, int]:
    """TypeScript's order of `paths` patterns: an exact pattern first, then the longest prefix before `*`."""
    return "*" in pattern[0], -len(pattern[0].split("*", 1)[0])


def _sveltekit(patterns: list[tuple[str, list[str]]], directory: str) -> list[tuple[str, list[str]]]:
    """A SvelteKit project's `paths` with its `$lib` (`src/lib` of its directory) unless they set one."""
    mine = [(pattern, [posixpath.join(directory, t) if directory else t for t in targets])
            for pattern, targets in _SVELTEKIT_PATHS if pattern not in dict(patterns)]
    return sorted(patterns + mine, key=_tried_first)


def _chain(reader: _Reader, rel: str) -> list[tuple[str, dict[str, object]]]:
    """A configuration and the ones it `extends` inside the checkout, nearest first."""
    chain: list[tuple[str, dict[str, object]]] = []
    current = rel
    for _ in range(_EXTENDS_DEPTH):
        data = reader.json(current)
        if data is None:
            break
        chain.append((current, data))
        base = data.get("extends")
        base = base[0] if isinstance(base, list) and base else base
        if not isinstance(base, str) or not base.startswith("."):
            break  # a package's configuration (`@tsconfig/node20`) is not in the checkout
        current = posixpath.normpath(posixpath.join(posixpath.dirname(current), base))
        current = current if current.endswith(".json") else f"{current}.json"
        if current.startswith("../") or any(current == seen for seen, _ in chain):
            break
    return chain


def _expand(patterns: Iterable[tuple[str, Sequence[str]]], known: _Modules) -> dict[str, str]:
    """Every specifier the patterns map to a module of the checkout, the first mapping winning."""
    mapped: dict[str, str] = {}
    for pattern, targets in patterns:
        for target in targets:
            target = module_name(target)
            if "*" not in pattern or "*" not in target:
                if "*" not in pattern and target in known.names:
                    mapped.setdefault(pattern, target)
                continue
            head, tail = target.split("*", 1)
            before, after = pattern.split("*", 1)
            for module in known.under(head):
                if module.endswith(tail) and len(module) > len(head) + len(tail):
                    mapped.setdefault(f"{before}{module[len(head):len(module) - len(tail)]}{after}", module)
    return mapped


class _Modules:
    """The checkout's module names, sorted so that the ones under a prefix are found by bisection."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = set(names)
        self._sorted = sorted(self.names)

    def under(self, prefix: str) -> list[str]:
        start = bisect.bisect_left(self._sorted, prefix)
        end = bisect.bisect_left(self._sorted, prefix + "\U0010ffff")
        return self._sorted[start:end]


def _package(reader: _Reader, rel: str, known: _Modules, taken: dict[str, str]) -> dict[str, str]:
    """`name` and `name/sub` of one workspace package, for the modules of its directory."""
    data = reader.json(rel)
    name = data.get("name") if data is not None else None
    if data is None or not isinstance(name, str) or not name or name.startswith(".") or name in taken:
        return {}
    directory = posixpath.dirname(rel)
    prefix = f"{directory}/" if directory else ""
    exported = _exports(data.get("exports"), directory, known)  # what Node itself reads first
    main = exported.pop(".", None)
    written = [data.get(key) for key in _ENTRY_FIELDS]
    entries = ([main] if main else []) + [f"{prefix}src", directory] + [
        module_name(posixpath.normpath(posixpath.join(directory, value)))
        for value in written if isinstance(value, str)]
    found = {f"{name}/{sub[2:]}": module for sub, module in exported.items()}
    entry = next((e for e in entries if e in known.names), "")
    if entry:
        found[name] = entry
    if directory:  # a repository's own root package imports its modules by path, not by its name
        for module in known.under(prefix):
            found.setdefault(f"{name}/{module[len(prefix):]}", module)
    return found


def _exports(exports: object, directory: str, known: _Modules) -> dict[str, str]:
    """A package.json `exports` map read for the modules of the checkout it names: `"."` and each `"./sub"`
    (`"./*": "./src/*.ts"` for each module it covers) → the module, the first target of its conditions
    that is a file of the checkout (`{"types": "./dist/index.d.ts", "default": "./src/index.ts"}` is
    src/index: the built files are not in it). Turborepo's internal packages export their sources so."""
    if isinstance(exports, (str, list)) or (isinstance(exports, dict) and not any(
            isinstance(key, str) and key.startswith(".") for key in exports)):
        exports = {".": exports}  # the package's one entry, bare or by conditions
    if not isinstance(exports, dict):
        return {}
    found: dict[str, str] = {}
    for key, value in list(exports.items())[:MAX_PATTERNS]:
        if len(found) >= MAX_EXPORTED:  # a hostile map of `./a1/*`, `./a2/*`, … over every module
            break
        if not isinstance(key, str) or not (key == "." or key.startswith("./")):
            continue
        for target in _targets(value, 0):
            if key.count("*") == 1 and target.count("*") == 1:
                matched = _star_exports(key, target, directory, known)
                if matched:
                    found.update({sub: module for sub, module in matched.items() if sub not in found})
                    break
            elif "*" not in key and "*" not in target:
                module = module_name(posixpath.normpath(posixpath.join(directory, target)))
                if module in known.names and not module.startswith("../"):
                    found[key] = module
                    break
    return found


def _targets(value: object, depth: int) -> Iterable[str]:
    """The target paths of one export's value in the order Node would try them (conditions in their order,
    then the fallbacks of an array), bounded in depth: the file is the repository's."""
    if depth > _EXTENDS_DEPTH:
        return
    if isinstance(value, str):
        parts = value.split("/")
        if parts[0] == "." and ".." not in parts and "node_modules" not in parts:  # as Node accepts a target
            yield value
    elif isinstance(value, list):
        for item in value[:MAX_PATTERNS]:
            yield from _targets(item, depth + 1)
    elif isinstance(value, dict):
        for item in list(value.values())[:MAX_PATTERNS]:
            yield from _targets(item, depth + 1)


def _star_exports(key: str, target: str, directory: str, known: _Modules) -> dict[str, str]:
    """`"./*": "./src/*.ts"`: each module of the checkout the target's pattern covers, by its subpath."""
    head, _, tail = target.partition("*")
    start = posixpath.normpath(posixpath.join(directory, head)) + ("/" if head.endswith("/") else "")
    if start.startswith("../") or not _EXTENSION.fullmatch(tail):  # only `*` then an extension, or nothing
        return {}
    key_head, _, key_tail = key.partition("*")
    return {f"{key_head}{module[len(start):]}{key_tail}": module for module in known.under(start)
            if module[len(start):]}

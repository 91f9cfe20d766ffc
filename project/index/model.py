"""Records the code index exchanges between parsing, the code graph and search.

These are plain frozen dataclasses: parsing produces them, the graph store and the search chunker
consume them. Global ids are `repo::path::fqn`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

SymbolKind = Literal[
    "namespace",
    "module",
    "type",
    "class",
    "interface",
    "trait",
    "enum",
    "enum_case",
    "method",
    "property",
    "constant",
    "function",
]

# `template`: an Angular component's class to its template's path (`templates` reads it for callers);
# `instance`: a module's name to the class of the instance it holds (`db = Database()`; line 0)
RelationKind = Literal["extends", "implements", "uses_trait", "imports", "calls", "references", "overrides",
                       "template", "instance"]
# The last part of both names of a star re-export's `imports` row (`src:*` → `src/decorators:*`, `pkg.*` →
# `pkg.core.*`): the row stands for every name under the two prefixes (`bindings` follows it).
STAR = "*"


@dataclass(frozen=True)
class Symbol:
    """One definition in one file."""

    kind: SymbolKind
    fqn: str  # e.g. `App\Http\Kernel::handle`, `App\helper`, `App\Http\Kernel::$name`
    name: str  # short name: `handle`
    path: str  # relative to the repository root, forward slashes
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    start_byte: int = 0
    end_byte: int = 0
    signature: str = ""
    docblock: str = ""
    attributes: tuple[str, ...] = ()
    parent_fqn: str = ""  # enclosing class-like for members, "" for top-level

    def global_id(self, repo: str) -> str:
        return f"{repo}::{self.path}::{self.fqn}"


@dataclass(frozen=True)
class Relation:
    """A directed edge from a symbol (or a file, for imports) to a target name.

    `target_fqn` is the resolved fully qualified target when statically knowable, otherwise ""; the
    bare `target_name` (method or function name) is always kept so name lookups never lose a site.
    """

    kind: RelationKind
    source_fqn: str
    target_name: str
    target_fqn: str = ""
    path: str = ""
    line: int = 0
    # For an unqualified function call inside a namespace PHP falls back to the global function at
    # run time when the namespaced one does not exist; the store decides which of the two is real.
    fallback_fqn: str = ""


@dataclass(frozen=True)
class ParsedFile:
    """Everything extracted from one source file."""

    path: str
    content_hash: str
    language: str
    symbols: tuple[Symbol, ...] = ()
    relations: tuple[Relation, ...] = ()
    has_errors: bool = False
    namespace: str = ""
    imports: dict[str, str] = field(default_factory=dict)

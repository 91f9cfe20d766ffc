"""Typed answers of the code-graph queries, shared by the CLI and the agent's tools.

Every answer carries an `IndexStatus`. `missing` means the check was not performed (no index);
`stale` means the answer was computed but some file it rests on changed since it was indexed, or no
longer parses, so a caller must say so rather than present the answer as verified.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

IndexState = Literal["ok", "stale", "missing"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class IndexStatus(_Frozen):
    state: IndexState
    stale_paths: list[str] = Field(default_factory=list)
    note: str = ""

    @property
    def performed(self) -> bool:
        return self.state != "missing"


MISSING = IndexStatus(state="missing", note="no code index for this checkout: the check was not performed")
STALE_NOTE = "these files changed since indexing"


class SymbolHit(_Frozen):
    kind: str
    fqn: str
    path: str
    start_line: int
    end_line: int
    signature: str = ""
    parent_fqn: str = ""
    global_id: str = ""


class CallSiteHit(_Frozen):
    """A call site; `certainty` is `resolved` when the receiver was statically known."""

    path: str
    line: int
    caller: str  # fqn of the calling method or function, "" for file-level code
    target_name: str
    target_fqn: str
    certainty: Literal["resolved", "by_name"]


class DefinitionResult(_Frozen):
    query: str
    status: IndexStatus
    symbols: list[SymbolHit] = Field(default_factory=list)


class _SitesResult(_Frozen):
    """Call sites found for a query symbol: its callers or its callees."""

    query: str
    status: IndexStatus
    sites: list[CallSiteHit] = Field(default_factory=list)


class CallersResult(_SitesResult):
    truncated: bool = False  # the limit cut the list


class CalleesResult(_SitesResult):
    pass


class ImpactNode(_Frozen):
    """A symbol affected by a change of the query symbol, `distance` hops away."""

    fqn: str
    distance: int
    relation: Literal["calls", "extends", "implements", "uses_trait", "overrides", "imports"]
    path: str
    line: int
    certainty: Literal["resolved", "by_name"]


class ImpactResult(_Frozen):
    query: str
    depth: int
    status: IndexStatus
    nodes: list[ImpactNode] = Field(default_factory=list)
    truncated: bool = False


class OutlineResult(_Frozen):
    path: str
    status: IndexStatus
    symbols: list[SymbolHit] = Field(default_factory=list)
    more: int = 0  # definitions past the limit, left out of `symbols`


class ExploreItem(_Frozen):
    query: str
    definitions: list[SymbolHit]
    callers: list[CallSiteHit]
    callees: list[CallSiteHit]
    callers_truncated: bool = False


class ExploreResult(_Frozen):
    status: IndexStatus
    items: list[ExploreItem] = Field(default_factory=list)


ExitKind = Literal["return_value", "return_void", "implicit_return", "throw", "parent_call", "yield"]


class Exit(_Frozen):
    """One way control leaves the ancestor method."""

    kind: ExitKind
    line: int
    text: str


class ContractResult(_Frozen):
    """What an override of `method` must honour: the nearest ancestor implementation's exits."""

    method: str
    status: IndexStatus
    ancestor: SymbolHit | None = None
    declared_by: list[SymbolHit] = Field(default_factory=list)  # interfaces and abstract declarations
    return_type: str = ""
    exits: list[Exit] = Field(default_factory=list)
    documented_throws: list[str] = Field(default_factory=list)

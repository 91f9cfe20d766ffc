"""The code a text names: tokens that look like code, resolved to graph symbols by whole names.

A document, a discussion or a question names code in a few recognisable ways: a code span
(`` `timeoutSeconds` ``), a member (`LockManager::timeoutSeconds`, `EntityManager#persist`,
`$this->release()`, and as Python and TypeScript write it, `Ledger.close`), a dotted name
(`billing.refunds.Ledger`, `refunds.settle`), a namespaced name (`App\\Lock\\LockManager`, `Support\\Str`,
`ORM\\Entity` after `use Doctrine\\ORM\\Mapping as ORM`), a CamelCase class name, a camelCase method name, a call
(`array_wrap(`, `now()`). Only those are candidates — plain words never are, so "core" in every
project link of a changelog names nothing, where a suffix match once resolved it to a `$score`
property. Neither are the names an example *declares* (`function setStatus(`) nor keys and named
arguments (`mappedBy: 'users'`).

A candidate resolves by **whole names** through an index built once from the code graph (no table
scan per word): the full name, a namespace-boundary suffix of it, a class's short name, or a member's
name. When production code and tests (or examples beside the documentation) share a name, the
tests' are left out. A name written with its
owner (`A::b`, `A\\B`) may name up to `AMBIGUOUS` symbols; a bare one (`persist(`, `$em->persist()`,
`NotSupported`) names a symbol only when it is the one production symbol of that name (a method of
tests only, or a magic method, names none): a document's example entity and a test model sharing
`addComment` is a coincidence, not a reference.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from project.index.db import Connection
from project.index.entrypoints import is_test

MAX_SYMBOLS = 12
AMBIGUOUS = 3
_CLASS_KINDS = frozenset({"class", "interface", "trait", "enum"})
_CALLABLE_KINDS = frozenset({"method", "function"})
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# not text: link targets, URLs, e-mail addresses, @mentions
_URL = re.compile(r"\]\([^)\s]*\)|\b[a-z][a-z0-9+.-]*://\S+|[\w.+-]+@[\w-]+\.[\w.]+|@[\w-]+")
_SPAN = re.compile(r"`+([^`\n]{2,160}?)`+")
_ALIAS = re.compile(rf"\buse\s+\\?({_IDENT}(?:\\{_IDENT})*)\s+as\s+({_IDENT})\s*;", re.I)
# `use Composer\Semver\VersionParser;`: in that text, `VersionParser` is that class and no other
_IMPORT = re.compile(rf"\buse\s+\\?((?:{_IDENT}\\)+({_IDENT}))\s*;", re.I)
# LockManager (a class), orWhereKey (a method): a candidate of its own, or a part of a dotted name
_CAMEL_NAME = r"(?:[A-Z][a-z0-9]+){2,}[A-Za-z0-9]*|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+"
_TOKEN = re.compile(
    rf"(?P<qualified>\\?{_IDENT}(?:\\{_IDENT})+(?:::\$?{_IDENT})?)"  # App\Lock\LockManager[::member]
    rf"|(?P<variable>\$(?:{_IDENT})->{_IDENT})\("  # $this->release(), $em->persist(): a call
    rf"|(?P<member>{_IDENT}(?:::|#)\$?{_IDENT})"  # LockManager::timeoutSeconds, EntityManager#persist
    rf"|(?P<dotted>\b{_IDENT}(?:\.{_IDENT})+\b)"  # Ledger.close, billing.refunds.Ledger: Python's, TypeScript's
    rf"|(?<!->)\b(?P<call>{_IDENT})\("  # now(, array_wrap(
    rf"|(?P<camel>\b(?:{_CAMEL_NAME})\b)"
)
# "the `mappedBy` attribute", "the 'inversedBy' option": a name of a mapping option or setting, not a method
_OPTION = re.compile(r"[*`'\"\]]*\s+(?:attribute|option|parameter|argument|key|setting|flag)s?\b", re.I)
_DECLARING = re.compile(r"\b(?:function|class|interface|trait|enum|const)\s+&?\s*$", re.I)
_SELF = frozenset({"self", "static", "parent"})
RECEIVERS = frozenset({"self", "cls", "this", "super"})  # `self.close()`: a member of whatever class
# products and services whose names prose writes in CamelCase; the classes named for them (a GitHub API
# client) are named by code: `GitHub::api()`, `Util\GitHub`, a code span
PRODUCTS = frozenset({
    "GitHub", "GitLab", "BitBucket", "JavaScript", "TypeScript", "CoffeeScript", "WordPress", "PhpStorm",
    "JetBrains", "YouTube", "LinkedIn", "PayPal", "DigitalOcean", "CloudFlare", "SendGrid", "MailGun", "PowerShell",
    "VirtualBox", "DockerHub", "StackOverflow", "OpenSSL", "LibreSSL", "OpenStack", "MacOS", "FreeBSD", "OpenBSD",
})

Row = tuple[str, str, str]  # fqn, kind, path


class SymbolIndex:
    """Whole-name lookups over a code graph's symbols, all through one primitive: the symbols of a short
    name. `of` loads them all at once (a document refresh resolves thousands of tokens); `live` asks
    the graph's name index per token (a question names a handful).

    `question`: the text is someone asking about this repository, who names its tests' classes as
    they are (`CmsUser::getName`); in a document or discussion, an owner only tests have is the
    example's own class (`User::$address`), and names none."""

    def __init__(self, by_name: Callable[[str], list[Row]], question: bool = False) -> None:
        self._by_name = by_name
        self._question = question

    @classmethod
    def of(cls, conn: Connection) -> SymbolIndex:
        names: dict[str, list[Row]] = {}
        if has_graph(conn):
            for fqn, name, kind, path in conn.execute(
                    "SELECT fqn, name, kind, path FROM symbols WHERE kind != 'namespace'"):
                names.setdefault(str(name), []).append((str(fqn), str(kind), str(path)))
        return cls(lambda name: names.get(name, []))

    @classmethod
    def live(cls, conn: Connection, *, question: bool = False) -> SymbolIndex:
        if not has_graph(conn):
            return cls(lambda name: [], question)
        return cls(lambda name: [(str(r[0]), str(r[1]), str(r[2])) for r in conn.execute(
            "SELECT fqn, kind, path FROM symbols WHERE name = ? AND kind != 'namespace'", (name,))], question)

    def resolve(self, text: str) -> tuple[str, ...]:
        """The symbols `text` names, in the order it names them, at most MAX_SYMBOLS."""
        found: dict[str, None] = {}
        for _, fqns in self.named(text):
            found.update(dict.fromkeys(fqns))
            if len(found) >= MAX_SYMBOLS:
                break
        return tuple(found)[:MAX_SYMBOLS]

    def named(self, text: str) -> Iterator[tuple[str, list[str]]]:
        """(form, the symbols it names) of each candidate of `text`; what a dotted name's parts name
        (`_dotted`) only when the dotted name itself names nothing."""
        dotted = False
        for form, token in candidates(text):
            if form.startswith(_ELSE):
                if dotted:
                    continue
                form = form.removeprefix(_ELSE)
            fqns = self.lookup(form, token)
            if form == "dotted":
                dotted = bool(fqns)
            yield form, fqns

    def lookup(self, form: str, token: str, ambiguous: int | None = AMBIGUOUS) -> list[str]:
        """The symbols one candidate names (none when more than `ambiguous` share the name, or when a
        bare name is not the one production symbol so named)."""
        rows, owned = self._lookup(form, token)
        production = list(dict.fromkeys(fqn for fqn, _, path in rows if not is_test(path)))
        everything = list(dict.fromkeys(fqn for fqn, _, _ in rows))
        if ambiguous is None:
            return production or everything
        if owned:
            found = production or everything
            return found if len(found) <= ambiguous else []
        if len(production) == 1:
            return production
        tests = [fqn for fqn in everything if re.search(r"Test(Case)?$", fqn)]  # "Fix the flaky QueueWorkerTest"
        return tests if not production and len(everything) == 1 and tests else []

    def _lookup(self, form: str, token: str) -> tuple[list[Row], bool]:
        """The rows a candidate could mean, and whether its owner (a class, a namespace) narrowed them."""
        if form == "qualified":
            owner, _, member = token.lstrip("\\").partition("::")
            whole = token.startswith("\\")  # fully qualified: the name as written, not a suffix of one
            owners = [row for row in self._by_name(owner.rsplit("\\", 1)[-1])
                      if (row[0].lower() == owner.lower() if whole else _names(row[0], owner))]
            if not member:
                return owners, True
            return [row for row in self._by_name(member) if any(
                row[0].lower() == f"{o[0]}::{member}".lower() for o in owners)], True
        if form == "variable":  # `$em->persist()`: the member of the class the variable is named for, if any
            variable, member = token[1:].split("->", 1)
            rows = [row for row in self._by_name(member) if row[1] in _CALLABLE_KINDS and "::" in row[0]]
            # a variable's name is weak evidence: an example's `$state` is its own entity, not a test model's
            owned = [row for row in rows if _names(row[0].split("::")[0], variable) and not is_test(row[2])]
            return (owned, True) if owned else ([] if member.startswith("__") else rows, False)
        if form == "member":
            owner, member = re.split(r"::|#", token, maxsplit=1)
            rows = self._by_name(member)
            if owner.lower() in _SELF:
                return [row for row in rows if "::" in row[0]], False
            # `User::$address` in an example is its own entity's: a test is named only by a test's name
            tests = self._question or re.search(r"Test(Case)?$", owner) is not None
            named = [row for row in rows if _names(row[0], f"{owner}::{member}")]
            return [row for row in named if tests or not is_test(row[2])], True
        if form == "dotted":  # `Ledger.close` is the member `…Ledger::close`; `refunds.settle` a module's function
            head, _, tail = token.rpartition(".")
            rows = self._by_name(tail)
            if head in RECEIVERS:
                return [row for row in rows if "::" in row[0] and row[1] in _CALLABLE_KINDS], False
            named = [row for row in rows if _names(row[0], f"{head}::{tail}") or _names(row[0], token)]
            return [row for row in named if self._question or not is_test(row[2])], True
        if form == "camel" and token[0].isupper():
            return [row for row in self._by_name(token) if row[1] in _CLASS_KINDS], False
        if token.startswith("__"):  # `__construct`, `__serialize`: every class may have one
            return [], False
        return [row for row in self._by_name(token) if row[1] in _CALLABLE_KINDS], False


def _names(fqn: str, written: str) -> bool:
    """Whether `written` is `fqn` or a suffix of it on a namespace or module boundary (`\\`, `.`, `/`, `:`;
    compared without case, as PHP names are)."""
    fqn, written = fqn.lower(), written.lower()
    return fqn == written or fqn.endswith(written) and fqn[-len(written) - 1] in "\\./:"


def has_graph(conn: Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'symbols'").fetchone() is not None


def candidates(text: str) -> Iterator[tuple[str, str]]:
    """(form, token) of every code-like token: code spans first, then the rest of the text; links,
    URLs and e-mail addresses are not text; `use A\\B as C` makes `C\\X` read as `A\\B\\X`."""
    text = _URL.sub(" ", text)
    aliases = {alias.lower(): target for target, alias in _ALIAS.findall(text)}
    # a class name alone means the class imported by that name (a qualified one is written as it is meant:
    # `use Composer\Composer;` does not make `Composer\IO\IOInterface` anything else)
    classes = {short.lower(): target for target, short in _IMPORT.findall(text)} | aliases
    for span in _SPAN.finditer(text):
        if re.fullmatch(r"[a-z]\w*", span.group(1).strip()) and _OPTION.match(text, span.end()):
            continue
        yield from _tokens(span.group(1).strip(), aliases, classes, prose=False)
    yield from _tokens(_SPAN.sub(" ", text), aliases, classes, prose=True)


def _tokens(text: str, aliases: dict[str, str], classes: dict[str, str], prose: bool) -> Iterator[tuple[str, str]]:
    for match in _TOKEN.finditer(text):
        form = match.lastgroup or ""
        token = match.group(form)
        if _DECLARING.search(text, max(0, match.start() - 24), match.start()) or _keyed(text, match.end(form)):
            continue  # a declaration in an example, or a key or named argument
        if prose and form == "camel" and token in PRODUCTS:
            continue  # "GitHub Actions", "your GitLab token": the product, not a class named for it
        if form == "camel" and token[0].islower() and _OPTION.match(text, match.end(form)):
            continue
        before = text[max(0, match.start() - 5):match.start()]
        if form in ("camel", "call") and before.endswith("\\"):
            form, token = "qualified", f"\\{token}"  # `\InvalidArgumentException`: a global name, whole
        elif form == "call" and before.lower().endswith("new "):
            form = "camel"  # `new SelectExpression(`: the class
        if form == "qualified" and not token.startswith("\\"):
            head, _, rest = token.partition("\\")
            if head.lower() in aliases:
                token = f"{aliases[head.lower()]}\\{rest}"
        elif form in ("camel", "member") and token[:1].isupper():  # an imported class, whole, as the text imports it
            owner, sep, member = token.partition("::" if "::" in token else "#")
            if owner.lower() in classes:
                form, token = "qualified", f"\\{classes[owner.lower()]}" + (f"::{member}" if sep else "")
        if form == "dotted":
            yield from _dotted(text, match.end(form), token)
            continue
        yield form, token


_ELSE = "else "  # a form read only when the dotted name before it names nothing (`SymbolIndex.named`)


def _dotted(text: str, end: int, token: str) -> Iterator[tuple[str, str]]:
    """A dotted name, then, to be read only when it names nothing, what its parts were read as before the
    dotted form was: the call of its last part (`repo.save()`: `save(`), and a CamelCase class among them
    (`DrawerLedger.closes`)."""
    yield "dotted", token
    parts = token.split(".")
    if text[end:end + 1] == "(":
        yield f"{_ELSE}call", parts[-1]
    for part in parts:
        if _CAMEL.fullmatch(part) and part not in PRODUCTS:
            yield f"{_ELSE}camel", part


_CAMEL = re.compile(_CAMEL_NAME)


def _keyed(text: str, end: int) -> bool:
    """`name:`, `**name**:` or `name=true` (not `name::`, `name ==`): a key, an option or a named argument."""
    while end < len(text) and text[end] in "*`'\"]":
        end += 1
    after = text[end:end + 2]
    return (after[:1] == ":" and after != "::") or (after[:1] == "=" and after not in ("==", "=>"))

"""PHP name resolution: one namespace's import table and the rules PHP applies to names in it.

PHP resolves class names at compile time from the current namespace and its `use` imports, while an
unqualified function (or constant) name that is not imported is looked up in the current namespace
first and in the global namespace at run time. A resolver therefore returns both candidates for
functions: the namespaced name and the global fallback; the store decides which one exists.
Class, function and namespace names are case-insensitive in PHP, so import aliases are keyed in
lower case; constants are case-sensitive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ImportKind = Literal["class", "function", "const"]

# Names that look like classes in a type or `new` position but are not classes.
SPECIAL_CLASS_NAMES = frozenset({"self", "static", "parent"})


def strip_leading(raw: str) -> str:
    """Drop the leading backslash of a fully qualified name and any whitespace inside it."""
    text = "".join(raw.split())
    return text[1:] if text.startswith("\\") else text


def join(namespace: str, name: str) -> str:
    return f"{namespace}\\{name}" if namespace else name


@dataclass
class NameTable:
    """Imports of one namespace block and the resolution rules that use them."""

    namespace: str = ""
    classes: dict[str, str] = field(default_factory=dict)
    functions: dict[str, str] = field(default_factory=dict)
    constants: dict[str, str] = field(default_factory=dict)

    def add(self, kind: ImportKind, fqn: str, alias: str = "") -> str:
        """Record `use [function|const] fqn [as alias]`; return the alias in effect."""
        fqn = strip_leading(fqn)
        short = alias or fqn.rsplit("\\", 1)[-1]
        if kind == "class":
            self.classes[short.lower()] = fqn
        elif kind == "function":
            self.functions[short.lower()] = fqn
        else:
            self.constants[short] = fqn
        return short

    def resolve_class(self, raw: str) -> str:
        """Fully qualify a class name as written (`Foo`, `Foo\\Bar`, `\\Foo`, `namespace\\Foo`)."""
        text = "".join(raw.split())
        if text.startswith("\\"):
            return text[1:]
        lowered = text.lower()
        if lowered.startswith("namespace\\"):
            return join(self.namespace, text[len("namespace\\") :])
        first, sep, rest = text.partition("\\")
        imported = self.classes.get(first.lower())
        if imported is not None:
            return f"{imported}\\{rest}" if sep else imported
        return join(self.namespace, text)

    def resolve_function(self, raw: str) -> tuple[str, str]:
        """Return (namespaced candidate, global fallback or "") for a function name as written."""
        text = "".join(raw.split())
        if text.startswith("\\"):
            return text[1:], ""
        if "\\" in text:
            return self.resolve_class(text), ""
        imported = self.functions.get(text.lower())
        if imported is not None:
            return imported, ""
        if self.namespace:
            return join(self.namespace, text), text
        return text, ""

    def imports(self) -> dict[str, str]:
        """All imports as alias → fqn; functions and constants are prefixed with their kind."""
        merged = dict(self.classes)
        merged.update({f"function {k}": v for k, v in self.functions.items()})
        merged.update({f"const {k}": v for k, v in self.constants.items()})
        return merged

"""A repository file's bytes as the text a model reads and edits, and that text back as the file's bytes.

Real repositories are not all UTF-8: legacy PHP code bases hold ISO-8859-1 and Windows-1252 files
(German, French, Spanish comments, strings and templates). Read as UTF-8 with replacement, every
accented byte showed as `�`; a patch the model wrote from that text named characters the file does not
hold, so `git apply` refused any hunk near one, and a line with an accent could not be changed at all;
text the model added went in as UTF-8 bytes, mixing two encodings in one file.

A file that is not valid UTF-8 is read as Windows-1252 (ISO-8859-1's printable characters are the same
bytes, and it names the 0x80-0x9F ones, `€` and the typographic quotes, that Windows editors wrote); the
five bytes Windows-1252 leaves undefined read as the ISO-8859-1 control character of the same number.
Every byte string decodes, and encodes back to exactly the same bytes: a file is never changed by being
read. Files written on Windows often end every line with CRLF, or start with a UTF-8 byte-order mark; the
model reads and writes `\n` (a patch it writes has no `\r`) and no mark before `<?php`, so `git apply`
refused every hunk of such a file, or its first line; and a file with no line end after its last line
(legacy PHP ending in `?>`) refused a patch of its end, which the model writes with one. `editable_view`
lets `git apply`, which compares bytes, work on a file as the model saw it (UTF-8, `\n` after every
line), then puts back its encoding, its line ends and its mark.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

UTF8 = "utf-8"
LEGACY = "windows-1252"
_UNDEFINED = {0x81, 0x8D, 0x8F, 0x90, 0x9D}  # bytes Windows-1252 leaves undefined


def _as_latin1(error: UnicodeError) -> tuple[str | bytes, int]:
    """Windows-1252's undefined bytes read, and written back, as the ISO-8859-1 code point of their number."""
    if isinstance(error, UnicodeDecodeError):
        return chr(error.object[error.start]), error.start + 1
    if isinstance(error, UnicodeEncodeError):
        point = ord(error.object[error.start])
        if point in _UNDEFINED:
            return bytes([point]), error.start + 1
    raise error


codecs.register_error("forgebot-latin1", _as_latin1)


def encoding_of(data: bytes) -> str:
    """UTF-8 when `data` is valid UTF-8 (ASCII included), else Windows-1252."""
    try:
        data.decode(UTF8)
    except UnicodeDecodeError:
        return LEGACY
    return UTF8


def decode(data: bytes) -> str:
    """The text of a file's bytes, as `encoding_of` reads them; never fails."""
    encoding = encoding_of(data)
    return data.decode(encoding) if encoding == UTF8 else data.decode(LEGACY, errors="forgebot-latin1")


def decode_lines(data: bytes) -> str:
    """`for_model` line by line: a diff (`git diff` output) holds lines of many files, each in its own encoding."""
    return "".join(for_model(line) for line in data.splitlines(keepends=True))


def read(path: Path) -> str:
    """The text the model reads of a file (`for_model`); `editable_view` puts back what it leaves out."""
    return for_model(path.read_bytes())


BOM = "\ufeff"


def for_model(data: bytes) -> str:
    """`decode`d, line ends as `\\n`, no byte-order mark: a patch's first line (`<?php`) names none."""
    return decode(data).removeprefix(BOM).replace("\r\n", "\n")


def crlf(data: bytes) -> bool:
    """Whether every line of `data` ends with CRLF (a file with some LF-only lines is left as it is)."""
    lines = data.count(b"\n")
    return lines > 0 and data.count(b"\r\n") == lines


def encode(text: str, encoding: str) -> bytes:
    """`text` as bytes of `encoding`; UnicodeEncodeError for a character it has no byte for."""
    return text.encode(encoding) if encoding == UTF8 else text.encode(LEGACY, errors="forgebot-latin1")


class Unencodable(ValueError):
    """An edit put a character into a legacy-encoded file that the file's encoding cannot hold."""


@dataclass(frozen=True)
class Form:
    """How a file's text is written that the model does not read: its encoding, CRLF line ends, a mark."""

    encoding: str
    crlf: bool
    bom: bool
    open_end: bool = False  # no line end after the last line: the model's patches end every line

    @classmethod
    def of(cls, data: bytes) -> Form | None:
        """The file's form when the model reads it otherwise (None: UTF-8, `\\n`, no mark, or binary)."""
        found = cls(encoding_of(data), crlf(data), data.startswith(BOM.encode(UTF8)),
                    bool(data) and not data.endswith(b"\n"))
        return found if b"\0" not in data and found != cls(UTF8, False, False) else None

    def view(self, data: bytes) -> bytes:
        """The file as the model read it, every line ended, for `git apply`."""
        return (for_model(data) + ("\n" if self.open_end else "")).encode(UTF8)

    def bytes_of(self, text: str) -> bytes:
        """`text` as the model wrote it, in this form; UnicodeEncodeError for a character the encoding lacks."""
        if self.open_end:
            text = text.removesuffix("\n")
        if self.crlf:
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        if self.bom:
            text = BOM + text.removeprefix(BOM)
        return encode(text, self.encoding)


@contextmanager
def editable_view(root: Path, paths: Iterable[str]) -> Iterator[None]:
    """While the block runs, each of `paths` that is a Windows-1252 file, ends its lines with CRLF, starts
    with a byte-order mark or has no line end after its last line holds the text the model read (UTF-8,
    `\\n` after every line, no mark), so a patch written from it applies byte for byte; afterwards each goes
    back to its own `Form`.

    If the block raises, or an edit put a character Windows-1252 has no byte for into such a file
    (Unencodable), every one of `paths` is put back exactly as it was before the block, the files it made
    removed: an edit lands whole or not at all. Binary files (a NUL byte) and links are left alone.
    """
    before: dict[Path, bytes | None] = {}  # None: there was no file
    converted: dict[Path, Form] = {}
    try:
        for target in dict.fromkeys(root / path for path in paths):
            if target.is_symlink():
                continue
            before[target] = data = target.read_bytes() if target.is_file() else None
            form = Form.of(data) if data is not None else None
            # a second link would be written through: worktree files have one (git stores no hard links)
            if form is not None and data is not None and target.stat().st_nlink == 1:
                converted[target] = form
                target.write_bytes(form.view(data))
        yield
        for target, form in converted.items():
            if target.is_file() and not target.is_symlink():  # else the edit deleted or replaced it
                _write_back(root, target, form)
    except BaseException:
        for target, original in before.items():
            if target.is_symlink() or (original is None and target.is_file()):
                target.unlink()
            if original is not None:
                target.write_bytes(original)
        raise


def _write_back(root: Path, target: Path, form: Form) -> None:
    text = target.read_bytes().decode(UTF8, errors="surrogateescape")
    try:
        target.write_bytes(form.bytes_of(text))
    except UnicodeEncodeError as exc:
        shown = exc.object[exc.start]
        raise Unencodable(
            f"{target.relative_to(root)} is {form.encoding} text, which has no byte for {shown!r} "
            f"(U+{ord(shown):04X}); write it as the file writes such characters (an HTML entity, an "
            "escape sequence) or leave it out") from None

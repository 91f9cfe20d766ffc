"""One CA bundle for every client forgebot runs: the forge APIs, the models and git.

Why: each client reads its own variable. requests (python-gitlab, PyGithub) reads REQUESTS_CA_BUNDLE or
CURL_CA_BUNDLE, httpx (the model SDKs, the embedder) SSL_CERT_FILE, and git GIT_SSL_CAINFO (Debian's git,
built on GnuTLS, reads no other). An operator of a self-managed forge behind a private CA sets the one their
other tools read and got a bot that half trusted it: with SSL_CERT_FILE alone every forge API call failed
("cannot connect … (SSLError)"); with REQUESTS_CA_BUNDLE alone the API worked, and each task then failed
at its clone, or at its first model call.

`share` runs once as any command starts (`bot.cli.main`), before a client or a child process exists:
every one of those variables the operator left unset gets a bundle of the certificates they named and the
public CAs the client would otherwise have used (certifi's, as requests and httpx ship). So a bundle that
holds the private CA alone still lets the models at a public endpoint be reached; a variable the operator
set keeps their value. A named file that cannot be read stops the command in one line.

`untrusted` tells a certificate that no bundle covers from an outage: what fails then says which variable
to set (`HINT`), once, instead of being retried as a network error for minutes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping
from pathlib import Path

VARIABLE = "SSL_CERT_FILE"  # the one a message names: the standard one, read by OpenSSL itself
# every variable that names a CA file for one of forgebot's clients; the first set is the operator's bundle
REQUESTS, GIT = "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO"  # what the forge API clients and git read
FILES = (VARIABLE, REQUESTS, "CURL_CA_BUNDLE", GIT)
# what an install's tools read: composer and OpenSSL (SSL_CERT_FILE), pip (PIP_CERT), requests, curl, git and
# node (which adds to its own CAs rather than replacing them)
INSTALLER_VARIABLES = ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
                       "NODE_EXTRA_CA_CERTS")
HINT = (f"for a private CA, set {VARIABLE} to its certificates (a PEM file); forgebot gives them to every "
        "client, git included")
_UNTRUSTED = re.compile(r"CERTIFICATE_VERIFY_FAILED|certificate verify failed|server certificate verification "
                        r"failed|SSL certificate problem|self[- ]signed certificate|unable to get local issuer")


_MARK = b"# forgebot: the operator's CA certificates, then the public CAs\n"  # PEM readers skip such lines


class BundleError(ValueError):
    """A CA variable names no readable file; the message names the variable, never a secret (it holds none)."""


def share(environ: MutableMapping[str, str], directory: Path) -> Path | None:
    """Point every unset CA variable of `environ` at the operator's certificates with the public CAs, kept in
    `directory`; the bundle written, or None when none was needed. BundleError for an unreadable file.

    A process `serve` starts finds every variable set (by `serve`'s own call) and leaves the bundle alone.
    """
    named = [(name, environ[name]) for name in FILES if environ.get(name)]
    for name, path in named:
        if not os.path.isfile(path) or not os.access(path, os.R_OK):
            raise BundleError(f"{name}={path}: no readable file there; it must name the CA certificates (PEM) "
                              "forgebot's clients are to trust")
    if not named or len(named) == len(FILES):
        return None
    theirs = Path(named[0][1]).read_bytes()
    if b"-----BEGIN CERTIFICATE-----" not in theirs:
        raise BundleError(f"{named[0][0]}={named[0][1]}: holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
    directory.mkdir(parents=True, exist_ok=True)
    bundle = directory / "ca-bundle.pem"
    partial = bundle.with_name(f".{bundle.name}.{os.getpid()}")  # `serve`'s children start with it in place
    partial.write_bytes(_MARK + _with_public(theirs))
    partial.replace(bundle)
    for name in FILES:
        if not environ.get(name):
            environ[name] = str(bundle)
    return bundle


def hint(reads: str) -> str:
    """What to do about a refused certificate, for a client that reads the variable `reads`: `HINT`, or, when
    the operator set that variable to another file than SSL_CERT_FILE, that it is the one read.

    A base image often names the system's bundle in REQUESTS_CA_BUNDLE or GIT_SSL_CAINFO already: an
    operator who then set SSL_CERT_FILE, as told, was told to set SSL_CERT_FILE again.
    """
    own, told = os.environ.get(reads, ""), os.environ.get(VARIABLE, "")
    if reads == VARIABLE or not own or not told or own == told or _ours(own):
        return HINT
    return (f"it reads {reads}={own}, not {VARIABLE}: unset {reads} (forgebot then gives {VARIABLE}'s "
            "certificates to every client) or add the CA there")


def _ours(path: str) -> bool:
    """Whether `path` is a bundle `share` wrote (it holds SSL_CERT_FILE's certificates already)."""
    try:
        with open(path, "rb") as file:
            return file.read(len(_MARK)) == _MARK
    except OSError:
        return False


def operators(environ: Mapping[str, str]) -> tuple[str, str]:
    """(variable, file) of the operator's certificates: the first CA variable set; ("", "") when none is."""
    return next(((name, environ[name]) for name in FILES if environ.get(name)), ("", ""))


def for_installers(environ: Mapping[str, str]) -> bytes:
    """The certificates a check's install is to trust: the operator's (the first CA variable set) and the
    public CAs; b"" when the operator named none (the install keeps its tools' own defaults).

    An install that downloads reaches an internal package mirror or registry (`install_private_hosts`, or a
    name only the corporate proxy resolves) whose certificate the company's CA signed; composer, pip, npm,
    curl and git each read their own variable (`INSTALLER_VARIABLES`), and the install sees none of the
    worker's. A CA certificate is no secret: the file is copied into the check's own HOME.
    """
    _, path = operators(environ)
    if not path:
        return b""
    try:
        theirs = Path(path).read_bytes()
    except OSError:
        return b""  # `share` stopped the command for an unreadable one; a file gone since trusts nothing more
    return theirs if theirs.startswith(_MARK) else _with_public(theirs)


def _with_public(theirs: bytes) -> bytes:
    import certifi  # what requests and httpx trust when no variable is set

    return theirs.rstrip() + b"\n\n# the public CAs (certifi)\n" + Path(certifi.where()).read_bytes()


def untrusted(exc: BaseException | str) -> str:
    """Why a TLS peer's certificate was refused, when that is what `exc` (or any exception it was raised
    from) says; "" for any other failure."""
    import ssl

    seen: set[int] = set()
    pending: list[BaseException | str] = [exc]
    while pending:
        current = pending.pop()
        if isinstance(current, str):
            if _UNTRUSTED.search(current):
                return _reason(current)
            continue
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError):
            return str(current.verify_message or "certificate verify failed")
        pending.extend(arg for arg in current.args if isinstance(arg, BaseException | str))
        pending.extend(link for link in (current.__cause__, current.__context__) if link is not None)
        pending.append(str(current))
    return ""


def _reason(text: str) -> str:
    found = re.search(r"certificate verify failed: ([^(\]\n]+)", text)
    if found:
        return found.group(1).strip()
    line = next((line for line in text.splitlines() if _UNTRUSTED.search(line)), text)
    return " ".join(line.split())[:160]

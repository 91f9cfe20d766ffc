"""Who the bot's commits are by, and their signature where a forge refuses unsigned commits.

GitLab's "Reject unsigned commits" push rule and GitHub's rulesets ("Require signed commits") refuse
every push that holds an unsigned commit, so a bot that cannot sign cannot deliver anything there. Git
signs with an SSH key (`gpg.format=ssh`, since git 2.34), and both forges verify such a signature
against the signing keys registered on the committer's account: the operator makes a key for the bot,
registers its public half on the bot account as a signing key, and sets the private half as
FORGEBOT_WORKSPACE__SIGNING_KEY.

That key is a secret of the worker's. It reaches a file only for the one command that signs: a 0600
file in a fresh 0700 directory of the worker's own temporary directory (the check sandbox has a private
/tmp and never sees it), named to git by its path, removed when the command returns. The signing program
is named by its absolute path, so no PATH and no repository config chooses the program that reads it
(the repository's config may not name `gpg.*` keys at all: `foundation.gitrunner`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

_SEARCH_PATH = os.pathsep.join(("/usr/bin", "/bin", "/usr/local/bin"))


class SigningError(RuntimeError):
    """The signing key cannot sign: not installed, passphrase-protected, not a key. Names no secret."""


@dataclass(frozen=True)
class Committer:
    """The bot's git identity (author and committer alike) and, when set, its SSH signing key."""

    name: str
    email: str
    signing_key: SecretStr | None = None

    def env(self) -> dict[str, str]:
        return {"GIT_AUTHOR_NAME": self.name, "GIT_AUTHOR_EMAIL": self.email,
                "GIT_COMMITTER_NAME": self.name, "GIT_COMMITTER_EMAIL": self.email}

    @contextmanager
    def signing(self) -> Iterator[tuple[list[str], dict[str, str]]]:
        """The commit's extra arguments and config: `-S` with the key, or nothing without one.

        `-S` on the command line signs whatever the config says (the hardened runner's own
        `commit.gpgSign=false` included, which keeps any other config from turning signing on).
        """
        if self.signing_key is None:
            yield [], {}
            return
        with key_file(self.signing_key) as path:
            yield ["-S"], {"gpg.format": "ssh", "user.signingKey": str(path), "gpg.ssh.program": ssh_keygen()}


def ssh_keygen() -> str:
    """The absolute path of `ssh-keygen`, which signs and reads SSH keys."""
    found = shutil.which("ssh-keygen", path=_SEARCH_PATH)
    if found is None:
        raise SigningError("ssh-keygen is not installed (Debian: openssh-client): commits cannot be signed")
    return found


@contextmanager
def key_file(key: SecretStr) -> Iterator[Path]:
    """The key in a file only this user can read, for as long as the block runs."""
    directory = tempfile.mkdtemp(prefix="forgebot-signing-")  # 0700
    try:
        path = Path(directory) / "key"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(key.get_secret_value().strip() + "\n")
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def public_key(key: SecretStr) -> tuple[str, str]:
    """The key's public line (`ssh-ed25519 AAAA… comment`), what the operator registers on the bot account,
    and its fingerprint (`256 SHA256:… (ED25519)`); SigningError when it cannot sign without a person.

    A passphrase would have every commit wait for someone to type it: `-P ""` tries none and fails.
    """
    program = ssh_keygen()
    with key_file(key) as path:
        derived = _run([program, "-y", "-P", "", "-f", str(path)], path)
        path.with_suffix(".pub").write_text(derived + "\n")
        fingerprint = _run([program, "-l", "-f", str(path.with_suffix(".pub"))], path)
    return derived, fingerprint


def _run(command: list[str], path: Path) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
                          env={"PATH": _SEARCH_PATH, "LC_ALL": "C"})
    if done.returncode != 0:
        said = [line.replace(f'Load key "{path}": ', "").replace(str(path), "the key")
                for line in done.stderr.strip().splitlines()[-1:]] or [f"exit {done.returncode}"]
        hint = " (it has a passphrase: the bot signs unattended, so its key may have none)" \
            if "passphrase" in said[0] else ""
        raise SigningError(f"the signing key cannot be read by ssh-keygen: {said[0]}{hint}")
    return done.stdout.strip()

"""The one way the product runs git: hardened against the repositories it works on.

A repository's checks run inside the task's worktree. Whatever they can write there — a new
`.git`, a `.gitattributes`, hooks, files named like config — must not make the bot's *next* git
command (coder commit, review diff, planning context, `.forgebot.yml` read, fetch, push) run a
program outside the sandbox. So every git command goes through `run` here, which:

- passes an explicit git dir and work tree. For a bot task worktree (`<root>/tasks/<id>`, see
  `foundation.workspace`) the git dir is the worktree's admin dir inside the bare mirror under the data
  dir, which the sandbox hides; the `.git` file in the worktree is never used to find it, only
  checked before every command to be exactly what `git worktree add` wrote. Anything else stops
  the task with `GitTampered` (a security stop, deliberately not a `GitError` so no "git failed,
  try something else" path swallows it);
- reads no config but the repository's own and its `-c` overrides: no system or global file, no
  `GIT_*` or other variable from the worker's environment, HOME and XDG pointing at an empty dir;
  only the operator's network settings pass (`NETWORK_ENV`: a private CA bundle, an outbound proxy),
  which the API clients read from the same variables, and none of them turns verification off;
- screens the repository's config file before every command. Config is the only place a filter,
  diff or merge driver, fsmonitor, ssh command or include can be named, so with none there a
  `.gitattributes` naming `filter=x` does nothing. The bot's own mirrors may hold only the keys the
  bot writes (an allow-list); other repositories (`forgebot run`, evaluation, the index CLI) are
  refused when their config names a program (a deny-list: their other settings are the user's);
- adds `-c` overrides that beat the repository's config: no hooks, no fsmonitor, no credential
  helper, no signing, no submodule recursion, only the allowed transports;
- bounds each command's time and output, and passes its errors through `foundation.redact` (the given
  secrets, token shapes and URL passwords).

Credentials reach git only through `config`, for the one command that needs them, as
`GIT_CONFIG_*` variables: never in argv, a remote URL or a file.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, Unpack

from foundation.redact import redact

# the workspace layout (`foundation.workspace`): <root>/mirrors/<key>.git and <root>/tasks/<task id>
MIRRORS, TASKS = "mirrors", "tasks"
DEFAULT_TIMEOUT = 120.0
MAX_OUTPUT = 64 * 1024 * 1024
_KEEP_STDERR = 16 * 1024
_PROTOCOLS = ("ext", "fd", "file", "git", "ssh", "http", "https")
# variables a caller may set for one command: identity, dates, a throwaway index
# The worker's variables git is given as they are: where to find a private CA, and the outbound proxy
# with its exceptions, as the operator set them for the whole process (requests and httpx read the
# same ones). Without them the mirror of a self-managed forge failed on its certificate, or could not
# connect, while every API call worked. Nothing here can turn TLS verification off (GIT_SSL_NO_VERIFY,
# http.sslVerify) or name a program. Uppercase HTTP_PROXY is not read by curl (a request header could
# set it under CGI), so it is not passed either.
NETWORK_ENV = frozenset({
    "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE",
    "https_proxy", "HTTPS_PROXY", "http_proxy", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
})
_CALLER_ENV = frozenset({
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_INDEX_FILE",
    "GIT_OPTIONAL_LOCKS",  # "0": read a user's checkout without refreshing (writing) its index
})
# every key `git init --bare`, `remote add` and `worktree add` write into a mirror; nothing else may be there
_MIRROR_KEYS = re.compile(
    r"core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks)"
    r"|extensions\.objectformat|remote\.origin\.(url|fetch)|branch\.[^\s]+\.(remote|merge)"
)
# keys through which a repository's config runs a program or pulls in more config
_PROGRAM_KEYS = re.compile(
    r"(include|includeif|filter|protocol|gpg|uploadpack|uploadarchive)\..*"
    r"|diff\.(external|.*\.(command|textconv))|merge\..*\.driver"
    r"|core\.(sshcommand|gitproxy|alternaterefscommand|worktree)|remote\..*\.(uploadpack|receivepack|vcs)"
    r"|extensions\.worktreeconfig"
)
# keys under those prefixes that only hold data: serving partial clones (`uploadpack.allowFilter`, set on a
# repository others clone with `--filter`), the wire protocol's version. A repository that sets them is
# an ordinary one, and refusing it stopped `forgebot run` on it with no way on but editing its config.
_DATA_KEYS = re.compile(
    r"uploadpack\.(allowfilter|allowanysha1inwant|allowreachablesha1inwant|allowtipsha1inwant|allowrefinwant"
    r"|keepalive)|protocol\.version"
)
# commands that look inside a gitlink's directory (a populated submodule) for changes, running that
# repository's own filters: `status` and `diff` do not (`diff.ignoreSubmodules=all`), these do
_DESCENDING = frozenset({"add", "commit", "diff-files", "stash", "update-index"})


class GitError(RuntimeError):
    """A git command failed or timed out; the message has its verb and stderr, never a secret."""


class GitTimeout(GitError):
    """A git command ran past its time limit and was killed."""


class GitTampered(Exception):
    """Git metadata is not what the bot wrote (a replaced `.git`, config naming a program).

    Not a `GitError` on purpose: code that treats a failed git command as "no answer" must not
    treat this as one. The task stops; the message says what was found.
    """


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Repo:
    """Where git's metadata is and which work tree it describes; `verify` runs before every command.

    `owned`: the metadata is the bot's own (a mirror or a task worktree of one), so its config is
    held to what the bot writes; otherwise only keys that run programs are refused.
    """

    git_dir: Path
    work_tree: Path | None
    config: Path
    owned: bool
    dotgit: str = ""  # a task worktree's `.git` file as `git worktree add` wrote it

    @classmethod
    def at(cls, path: Path) -> Repo:
        """The repository at `path`: a bot mirror, a bot task worktree, or another checkout.

        Which of the three is decided by where `path` is (the data dir's layout), never by what
        is inside it: a check cannot turn a task worktree into "another checkout". `run` verifies
        the repository before each command.
        """
        path = Path(os.path.realpath(path))
        if path.parent.name == MIRRORS and path.name.endswith(".git"):
            repo = cls(git_dir=path, work_tree=None, config=path / "config", owned=True)
        elif path.parent.name == TASKS and (path.parent.parent / MIRRORS).is_dir():
            repo = _task_worktree(path)
        else:
            repo = _checkout(path)
        return repo

    def verify(self) -> None:
        """Raise GitTampered unless the metadata is still what it was when the bot wrote it."""
        if self.work_tree is not None and self.dotgit and _task_worktree(self.work_tree) != self:
            raise GitTampered(f"{self.work_tree}/.git was replaced (expected a file pointing at {self.git_dir}); "
                              "refusing to run git on this worktree")
        screen_config(self.config, owned=self.owned)

    def args(self) -> list[str]:
        work = [f"--work-tree={self.work_tree}"] if self.work_tree is not None else []
        return [f"--git-dir={self.git_dir}", *work]


def _read_small(path: Path, limit: int = 4096) -> str:
    """A regular file's text (not a symlink, not a directory); GitTampered otherwise."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            raise GitTampered(f"{path} is not a small regular file")
        return path.read_text(errors="replace")
    except OSError as exc:
        raise GitTampered(f"{path} cannot be read: {exc.strerror}") from None


def _dotgit(root: Path) -> str:
    try:
        return _read_small(root / ".git")
    except GitTampered:
        raise GitTampered(f"{root}/.git was replaced (not the file `git worktree add` writes); "
                          "refusing to run git on this worktree") from None


def _task_worktree(root: Path) -> Repo:
    """A worktree the bot made with `git worktree add`: its admin dir lies in a mirror, linked both ways."""
    dotgit = _dotgit(root)
    match = re.fullmatch(r"gitdir: (/[^\n]+)\n", dotgit)
    if match is None:
        raise GitTampered(f"{root}/.git was replaced (not the file `git worktree add` writes)")
    admin = Path(match.group(1))
    mirrors = root.parent.parent / MIRRORS
    layout = admin.parent.name == "worktrees" and admin.parent.parent.parent == mirrors
    if not layout or os.path.realpath(admin) != str(admin) or not admin.parent.parent.name.endswith(".git"):
        raise GitTampered(f"{root}/.git points at {admin}, not at a worktree of a mirror under {mirrors}")
    if _read_small(admin / "gitdir") != f"{root}/.git\n" or _read_small(admin / "commondir") != "../..\n":
        raise GitTampered(f"{admin} does not belong to the worktree {root}")
    return Repo(git_dir=admin, work_tree=root, config=admin.parent.parent / "config", owned=True, dotgit=dotgit)


def _checkout(root: Path) -> Repo:
    """Any other repository: `.git` a directory, or a linked worktree's `.git` file."""
    dotgit = root / ".git"
    if dotgit.is_dir() and not dotgit.is_symlink():
        return Repo(git_dir=dotgit, work_tree=root, config=dotgit / "config", owned=False)
    if dotgit.is_file() and not dotgit.is_symlink():
        match = re.fullmatch(r"gitdir: ([^\n]+)\n?", _read_small(dotgit))
        if match is None:
            raise GitError(f"{dotgit} is not a gitdir file")
        git_dir = (root / match.group(1)).resolve()
        common = git_dir / _read_small(git_dir / "commondir").strip() if (git_dir / "commondir").exists() else git_dir
        return Repo(git_dir=git_dir, work_tree=root, config=common.resolve() / "config", owned=False)
    if (root / "HEAD").is_file() and (root / "objects").is_dir():  # a bare repository
        return Repo(git_dir=root, work_tree=None, config=root / "config", owned=False)
    raise GitError(f"{root} is not a git repository")


def screen_config(config: Path, *, owned: bool) -> None:
    """Raise GitTampered if the repository's config file names a key it must not have."""
    try:
        info = os.lstat(config)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode) or info.st_size > 1024 * 1024:
        raise GitTampered(f"{config} is not a small regular file")
    # any write to the file changes its ctime: an unchanged file need not be read again
    _screen(str(config), owned, (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns))


@functools.lru_cache(maxsize=256)
def _screen(config: str, owned: bool, version: tuple[int, ...]) -> None:
    """`screen_config` for one version of the file; only passing versions are remembered."""
    done = run(["config", "--file", config, "--list", "-z"], None, timeout=30)
    if done.returncode != 0:
        raise GitTampered(f"{config} cannot be parsed: {done.stderr.strip()[-300:]}")
    keys = {entry.split("\n", 1)[0] for entry in done.stdout.split("\0") if entry}
    bad = sorted(k for k in keys if not _MIRROR_KEYS.fullmatch(k)) if owned else sorted(
        k for k in keys if _PROGRAM_KEYS.fullmatch(k) and not _DATA_KEYS.fullmatch(k)
    )
    if owned and bad:
        raise GitTampered(f"{config}: {', '.join(bad[:5])} may not be set in the bot's own repository; "
                          "refusing to run git")
    if bad:
        raise GitTampered(f"{config}: {', '.join(bad[:5])} may not be set in this repository; refusing to run git "
                          "(such a setting can run a program or read more configuration: `git config --unset "
                          f"{bad[0]}` removes it, or work on a clone without it)")


@functools.cache
def _empty_home() -> Path:
    """HOME and XDG_CONFIG_HOME for git: an empty directory of this process's own."""
    home = tempfile.mkdtemp(prefix="forgebot-git-home-")
    atexit.register(shutil.rmtree, home, True)
    return Path(home)


@functools.cache
def _executable() -> str:
    found = shutil.which("git", path=os.defpath + os.pathsep + "/usr/local/bin")
    if found is None:
        raise GitError("git is not installed")
    return found


def environment(config: Mapping[str, str] = {}, extra: Mapping[str, str] = {}) -> dict[str, str]:
    """git's whole environment: of the worker's, only its network settings (`NETWORK_ENV`); `config` as
    `GIT_CONFIG_*` variables."""
    unknown = set(extra) - _CALLER_ENV
    if unknown:
        raise ValueError(f"not a variable git may be given: {sorted(unknown)}")
    home = str(_empty_home())
    env = {
        "PATH": f"{Path(_executable()).parent}{os.pathsep}{os.defpath}",
        "HOME": home,
        "XDG_CONFIG_HOME": home,
        "LANG": "C",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_PROTOCOL_FROM_USER": "0",
        **{name: value for name in NETWORK_ENV if (value := os.environ.get(name))},
        **extra,
    }
    for number, (key, value) in enumerate(config.items()):
        env.update({f"GIT_CONFIG_KEY_{number}": key, f"GIT_CONFIG_VALUE_{number}": value})
    if config:
        env["GIT_CONFIG_COUNT"] = str(len(config))
    return env


def overrides(protocols: Iterable[str] = (), safe: Sequence[Path] = ()) -> list[str]:
    """`-c` options: command-line config beats the repository's for the same key."""
    allowed = set(protocols)
    options = {
        "core.hooksPath": os.devnull,
        "core.fsmonitor": "false",
        "core.untrackedCache": "false",
        "core.attributesFile": os.devnull,
        "core.excludesFile": os.devnull,
        "core.pager": "cat",
        "core.editor": "false",
        "core.askPass": "",
        "credential.helper": "",  # an empty value clears every helper configured before it
        "commit.gpgSign": "false",
        "tag.gpgSign": "false",
        "log.showSignature": "false",
        "submodule.recurse": "false",
        "fetch.recurseSubmodules": "false",
        "diff.ignoreSubmodules": "all",
        "status.submoduleSummary": "false",
        "gc.auto": "0",
        "maintenance.auto": "false",
        "protocol.allow": "never",
        **{f"protocol.{name}.allow": "always" if name in allowed else "never" for name in (*_PROTOCOLS, *allowed)},
    }
    pairs = [*options.items(), *(("safe.directory", str(path)) for path in safe)]
    return [arg for key, value in pairs for arg in ("-c", f"{key}={value}")]


class GitOptions(TypedDict, total=False):
    """The options `run` passes on to `run_bytes` unchanged (their defaults are `run_bytes`'s)."""

    env: Mapping[str, str]
    config: Mapping[str, str]
    protocols: Iterable[str]
    secrets: Iterable[str]
    timeout: float
    max_output: int


def run(args: Sequence[str], repo: Repo | None, *, input: str | None = None, **options: Unpack[GitOptions]
        ) -> Completed:
    """Run `git <args>` on `repo` (None: a command outside any repository) and return what it did.

    The repository is verified first (GitTampered). A timeout or output past `max_output` kills
    the command and raises GitError; a non-zero exit is returned, for the caller to judge.
    """
    done = run_bytes(args, repo, input=None if input is None else input.encode(), **options)
    return Completed(done.returncode, done.stdout.decode(errors="replace"), done.stderr)


@dataclass(frozen=True)
class CompletedBytes:
    """A command's exit status, its stdout as git wrote it (blob contents, `-z` listings) and its stderr."""

    returncode: int
    stdout: bytes
    stderr: str


def run_bytes(
    args: Sequence[str],
    repo: Repo | None,
    *,
    input: bytes | None = None,
    env: Mapping[str, str] = {},
    config: Mapping[str, str] = {},
    protocols: Iterable[str] = (),
    secrets: Iterable[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = MAX_OUTPUT,
) -> CompletedBytes:
    """`run` with stdin and stdout as bytes: for blob contents, whose byte offsets must survive, and for
    callers that keep what a failed command printed before it died (a history read stopped by one
    unreadable object keeps the commits before it)."""
    if repo is not None:
        repo.verify()
        if args and args[0] in _DESCENDING and repo.work_tree is not None:
            _no_planted_repositories(repo, env)
    safe = [p for p in (repo.git_dir, repo.work_tree) if p is not None] if repo is not None else []
    command = [_executable(), *overrides(protocols, safe), *(repo.args() if repo else []), *args]
    where = (repo.work_tree or repo.git_dir) if repo is not None else _empty_home()
    secret_list = [s for s in secrets if s]
    with tempfile.TemporaryFile() as stdin:
        if input is not None:
            stdin.write(input)
            stdin.seek(0)
        proc = subprocess.Popen(
            command, cwd=where, env=environment(config, env), stdin=stdin, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True,
        )
        out, err, problem = _collect(proc, timeout, max_output)
    verb = args[0] if args else "git"
    if problem:
        raise (GitTimeout if problem.startswith("timed out") else GitError)(f"git {verb} {problem}")
    return CompletedBytes(proc.returncode, out, redact(err.decode(errors="replace").strip()[-_KEEP_STDERR:],
                                                        secret_list))


def _no_planted_repositories(repo: Repo, env: Mapping[str, str]) -> None:
    """GitTampered if a gitlink's directory holds a repository: the bot never populates submodules.

    git would run that repository's filters (its config and `.gitattributes` are its own, out of
    reach of any `-c`) when it checks the submodule for changes.
    """
    assert repo.work_tree is not None
    done = run(["ls-files", "--stage", "-z"], repo, env=env)
    if done.returncode != 0:
        raise GitError(f"git ls-files failed ({done.returncode}): {done.stderr[-300:]}")
    for entry in done.stdout.split("\0"):
        if entry.startswith("160000 "):
            path = entry.split("\t", 1)[1]
            if os.path.lexists(repo.work_tree / path / ".git"):
                raise GitTampered(f"a repository was planted at {path} (a submodule the bot never checks out)")


def _collect(proc: subprocess.Popen[bytes], timeout: float, limit: int) -> tuple[bytes, bytes, str]:
    """stdout (up to `limit`) and the tail of stderr; kills the process group on timeout or overflow."""
    assert proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + timeout
    out, err = bytearray(), bytearray()
    problem = ""
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ, out)
        selector.register(proc.stderr, selectors.EVENT_READ, err)
        while selector.get_map() and not problem:
            left = deadline - time.monotonic()
            if left <= 0:
                problem = f"timed out after {timeout:g}s"
                break
            for key, _ in selector.select(min(left, 1.0)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                buffer: bytearray = key.data
                buffer += chunk
                if buffer is out and len(out) > limit:
                    problem = f"output exceeds {limit} bytes"
                elif buffer is err and len(err) > 2 * _KEEP_STDERR:
                    del err[:-_KEEP_STDERR]
    if problem:
        _kill(proc)
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    return bytes(out), bytes(err), problem


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def git(path: Path, *args: str, env: Mapping[str, str] = {}, config: Mapping[str, str] = {},
        timeout: float = DEFAULT_TIMEOUT) -> str:
    """stdout of `git <args>` on the repository at `path`; GitError unless it exits 0."""
    done = run(args, Repo.at(path), env=env, config=config, timeout=timeout)
    if done.returncode != 0:
        raise GitError(f"git {args[0]} failed ({done.returncode}): {done.stderr[-800:]}")
    return done.stdout


def git_bytes(path: Path, *args: str, timeout: float = DEFAULT_TIMEOUT) -> bytes:
    """`git` with stdout as git wrote it: a diff of files in other encodings than UTF-8 (`project.filetext`)."""
    done = run_bytes(args, Repo.at(path), timeout=timeout)
    if done.returncode != 0:
        raise GitError(f"git {args[0]} failed ({done.returncode}): {done.stderr[-800:]}")
    return done.stdout

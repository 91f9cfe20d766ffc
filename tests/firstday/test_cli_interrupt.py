"""Ctrl-C on a long `forgebot index`: a first index with vectors embeds every chunk of the checkout (about
half an hour for a 3,400-file PHP project on two cores with the offline model). The command says at
once how many chunks it embeds and that an interrupt keeps them, then how far it is; Ctrl-C ends it
with one line saying what was kept (exit 130, no traceback), search answers meanwhile from its other
legs, and the next `forgebot index` embeds only the rest."""

from __future__ import annotations

import fcntl
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from project.index.location import index_path
from project.index.progress import pace
from tests.fakes.embeddings_http import EmbeddingsState, create_embeddings_app
from tests.fakes.server import serving
from tests.firstday.cli import FORGEBOT, forgebot
from tests.repos import init_repo

pytestmark = pytest.mark.timeout(300)
BATCH = 256  # chunks a batch of `search_store.embed_pending` embeds and commits


def _checkout(root: Path) -> Path:
    """A PHP project of 320 functions: more chunks than one batch."""
    root.mkdir()
    for part in range(8):
        functions = "\n".join(f"function total_{part}_{n}(array $items): int\n{{\n    return count($items) + {n};\n}}\n"
                              for n in range(40))
        (root / f"totals_{part}.php").write_text(f"<?php\n\n{functions}", encoding="utf-8")
    return init_repo(root)


def _at_a_terminal(cwd: Path, env: dict[str, str], *argv: str) -> subprocess.Popen[str]:
    """The installed command in a process group of its own that takes SIGINT as a terminal delivers it
    to the foreground group (a shell's background job would ignore it), with only `env`'s settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")}
    return subprocess.Popen([str(FORGEBOT), *argv], cwd=cwd, env={**clean, **env}, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_ctrl_c_while_embedding_keeps_the_vectors_and_the_next_index_goes_on(tmp_path: Path) -> None:
    root = _checkout(tmp_path / "shop")
    state = EmbeddingsState(dimension=16, hold_from=2)  # the second batch never answers until released
    with serving(create_embeddings_app(state)) as server:
        env = {"FORGEBOT_DATA_DIR": str(tmp_path / "data"), "FORGEBOT_EMBEDDER__KIND": "http",
               "FORGEBOT_EMBEDDER__BASE_URL": f"{server.url}/v1", "FORGEBOT_EMBEDDER__MODEL": "tiny",
               "FORGEBOT_EMBEDDER__DIMENSION": "16", "FORGEBOT_EMBEDDER__BATCH_SIZE": str(BATCH)}
        command = _at_a_terminal(tmp_path, env, "index", str(root))
        try:
            deadline = time.monotonic() + 120
            while state.received < 2:  # the first batch answered and committed, the second asked
                assert command.poll() is None and time.monotonic() < deadline, command.communicate()
                time.sleep(0.05)
            os.killpg(command.pid, signal.SIGINT)  # Ctrl-C
            out, err = command.communicate(timeout=60)
        finally:
            state.released = True
            if command.poll() is None:
                command.kill()
        said = err.splitlines()
        assert command.returncode == 130, (out, err)
        assert "Traceback" not in err
        index = next((tmp_path / "data").rglob("index.db"))
        with sqlite3.connect(index) as db:
            total, embedded = db.execute("SELECT count(*), sum(embedded) FROM chunks").fetchone()
        assert total > BATCH and embedded == BATCH  # the committed batch is kept
        again = f"`forgebot index {root}`"
        assert said[0] == f"forgebot index: embedding {total:,} chunks with tiny; Ctrl-C stops and keeps what is " \
                          f"embedded, {again} goes on from there", said
        assert said[-1] == f"forgebot index: interrupted: {BATCH:,} of {total:,} chunks embedded, kept; {again} goes " \
                           "on from there (search answers meanwhile from its other legs)", said

        meanwhile = forgebot("search", str(root), "count the items of a total", cwd=tmp_path, **env)
        assert meanwhile.code == 0 and meanwhile.out[0].startswith("totals_"), meanwhile.text
        assert f"vectors are being built or out of date: {BATCH} of {total} chunks embedded" in meanwhile.text

        state.hold_from = 0
        rest = forgebot("index", str(root), cwd=tmp_path, **env)
        assert rest.code == 0, rest.text
        assert f"search: {total} chunks, {total - BATCH} embedded" in rest.out  # only what was not kept
        with sqlite3.connect(index) as db:
            assert db.execute("SELECT count(*) FROM chunks WHERE embedded = 0").fetchone()[0] == 0


def test_ctrl_c_before_the_vectors_says_so_without_a_traceback(tmp_path: Path) -> None:
    """An interrupt before the vectors (here: a first `--no-embeddings` build waiting on the lock another
    `forgebot index` of the same checkout holds) ends the same way, and leaves no half-built file."""
    root = _checkout(tmp_path / "shop")
    env = {"FORGEBOT_DATA_DIR": str(tmp_path / "data"), "FORGEBOT_EMBEDDER__KIND": "off"}
    index = index_path(tmp_path / "data", root)
    index.parent.mkdir(parents=True)
    with index.with_suffix(".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other build
        command = _at_a_terminal(tmp_path, env, "index", str(root), "--no-embeddings")
        deadline = time.monotonic() + 120
        while not _waits_on_a_lock(command.pid):
            assert command.poll() is None and time.monotonic() < deadline, command.communicate()
            time.sleep(0.05)
        os.killpg(command.pid, signal.SIGINT)
        out, err = command.communicate(timeout=60)
    assert command.returncode == 130, (out, err)
    assert "Traceback" not in err
    assert err.splitlines()[-1] == ("forgebot index: interrupted; the index keeps what was complete (a first build "
                                    "keeps nothing), `forgebot index` builds the rest"), err
    assert not index.exists() and not index.with_suffix(".building").exists()


def _waits_on_a_lock(pid: int) -> bool:
    """Whether process `pid` is blocked on a file lock (`/proc/locks` marks a waiter `->`)."""
    return any(line.split()[1] == "->" and line.split()[5] == str(pid)
               for line in Path("/proc/locks").read_text().splitlines() if "->" in line)


def test_the_pace_says_how_long_is_left_in_the_unit_a_reader_wants() -> None:
    assert pace(0, 14_463, 5.0) == ""  # nothing done yet: no rate to tell
    assert pace(256, 14_463, 12.0) == " (21 a second, about 11 min left)"
    assert pace(500, 1_000, 3.0) == " (167 a second, about 3 s left)"
    assert pace(100, 1_000_000, 50.0) == " (2.0 a second, about 138 h 52 min left)"
    assert pace(2_295, 2_295, 190.0) == " (12 a second)"  # done: nothing left to estimate


def test_ctrl_c_in_any_command_is_one_line_and_status_130(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Every command, not only `index`: an interrupt is a line naming the command, not a traceback."""
    from bot.cli import main as cli
    from bot.cli import tasks_cli

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    for name in [n for n in os.environ if n.startswith("FORGEBOT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("FORGEBOT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(tasks_cli, "run", interrupted)
    assert cli.main(["tasks"]) == 130
    assert capsys.readouterr().err == "forgebot tasks: interrupted\n"


def test_an_embeddings_endpoint_that_goes_down_keeps_what_was_built(tmp_path: Path) -> None:
    """The embeddings endpoint answers the first batch, then 503: `index`, `search --embed` and `memory
    --embed` each ended in an EmbeddingError traceback. Now one line says what is built and kept and what to
    do (exit 1); search still answers from its other legs; the next index, the endpoint back, goes on."""
    root = _checkout(tmp_path / "shop")
    state = EmbeddingsState(dimension=16, down_from=2)
    with serving(create_embeddings_app(state)) as server:
        env = {"FORGEBOT_DATA_DIR": str(tmp_path / "data"), "FORGEBOT_EMBEDDER__KIND": "http",
               "FORGEBOT_EMBEDDER__BASE_URL": f"{server.url}/v1", "FORGEBOT_EMBEDDER__MODEL": "tiny",
               "FORGEBOT_EMBEDDER__DIMENSION": "16", "FORGEBOT_EMBEDDER__BATCH_SIZE": str(BATCH)}
        index = forgebot("index", str(root), cwd=tmp_path, **env)
        assert index.code == 1 and not [line for line in index.err if "Traceback" in line], index.err
        assert index.err[-1].startswith("forgebot index: the embeddings endpoint failed (")
        assert index.err[-1].endswith(
            f"): the code graph and full-text tables are built, {BATCH} of 320 chunks embedded, kept; check "
            f"FORGEBOT_EMBEDDER__*, then `forgebot index {root}` goes on from there (search answers meanwhile "
            "from its other legs)")
        search = forgebot("search", str(root), "count the items", "--embed", cwd=tmp_path, **env)
        assert search.code == 1 and search.out and search.out[0].startswith("totals_"), search.out
        assert "# vector leg absent: the embeddings endpoint failed (said above); lexical and graph legs only" \
            in search.out
        memory = forgebot("memory", str(root), "why count the items", "--embed", cwd=tmp_path, **env)
        assert memory.code == 1 and memory.err[-1].startswith("forgebot memory: the embeddings endpoint failed ("), \
            memory.err
        state.down_from = 0  # back up
        again = forgebot("index", str(root), cwd=tmp_path, **env)
        assert again.code == 0 and "search: 320 chunks, 64 embedded" in again.out, again.out

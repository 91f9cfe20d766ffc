"""`.forgebot.yml`: read from the default branch only, validated, errors that name the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from graph.coder.patch import DEFAULT_PROTECTED
from project.repoconfig import (
    MAX_CONFIG_BYTES,
    RepoConfig,
    RepoConfigError,
    load_repo_config,
    parse_repo_config,
)
from tests.graph.conftest import git, init_repo

COMMIT = ["-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-am"]

VALID = """\
profile: python
commands:
  test: "python -m pytest -q tests/unit"
  smoke: false
  lint:
    ruff: false
    mypy: "mypy {files}"
  timeout_seconds: 300
labels:
  implement: bot::do
budgets:
  max_tokens: 200000
  max_cost_usd: 2.5
protected_paths: ["migrations/", ".github/*", "*.lock"]
database: reporting
"""


def _repo(tmp_path: Path, config: str | None, name: str = ".forgebot.yml") -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("fixture\n")
    if config is not None:
        (repo / name).write_text(config)
    return init_repo(repo)


def test_a_missing_file_gives_the_defaults(tmp_path: Path) -> None:
    config = load_repo_config(_repo(tmp_path, None), "main")
    assert config.model_dump() == RepoConfig().model_dump()
    assert config.profile is None and config.database is None
    # a README alone is no language: no profile, said with what was looked for, and no check to run
    choice = config.profile_choice()
    assert choice.name is None and choice.detected
    assert "no composer.json, package.json, pyproject.toml, setup.cfg or setup.py at" in choice.reason
    assert config.resolve_profile().test is None and config.resolve_profile().lint == ()


def test_every_field_is_read_from_the_default_branch(tmp_path: Path) -> None:
    config = load_repo_config(_repo(tmp_path, VALID), "main")
    assert config.profile == "python"
    assert config.labels.implement == "bot::do" and config.labels.analyze is None
    assert config.budgets.max_tokens == 200000 and config.budgets.max_cost_usd == 2.5
    assert config.commands.timeout_seconds == 300
    assert config.database == "reporting"
    profile = config.resolve_profile()
    assert profile.test is not None and profile.test.run == "python -m pytest -q tests/unit"
    assert profile.smoke is None
    assert [spec.name for spec in profile.lint] == ["py-syntax", "mypy"]


def test_the_yaml_extension_is_read_too_and_the_yml_file_wins(tmp_path: Path) -> None:
    """`.forgebot.yaml` was ignored without a word: the repository ran on the defaults."""
    repo = _repo(tmp_path, VALID, ".forgebot.yaml")
    assert load_repo_config(repo, "main").labels.implement == "bot::do"
    (repo / ".forgebot.yml").write_text("labels:\n  implement: yml::wins\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "both")
    assert load_repo_config(repo, "main").labels.implement == "yml::wins"
    assert {".forgebot.yaml", ".forgebot.yml"} <= set(DEFAULT_PROTECTED)  # the coder may write neither


def test_the_change_branch_and_working_tree_are_ignored(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "commands:\n  test: phpunit\n")
    git(repo, "checkout", "-q", "-b", "forgebot/1-change")
    (repo / ".forgebot.yml").write_text("commands:\n  test: false\n")
    git(repo, *COMMIT, "switch off the tests")
    (repo / ".forgebot.yml").write_text("commands:\n  test: 'true'\n  lint: false\n")  # uncommitted
    config = load_repo_config(repo, "main")
    assert config.commands.test == "phpunit" and config.commands.lint is None


def test_a_file_added_only_on_the_change_branch_is_ignored(tmp_path: Path) -> None:
    repo = _repo(tmp_path, None)
    git(repo, "checkout", "-q", "-b", "change")
    (repo / ".forgebot.yml").write_text("profile: python\n")
    git(repo, "add", ".forgebot.yml")
    git(repo, *COMMIT, "add config")
    assert load_repo_config(repo, "main").profile_choice().name is None
    assert load_repo_config(repo, "change").profile == "python"


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("commands:\n  tset: phpunit\n", "commands.tset", "unknown field"),
        ("profle: php\n", "profle", "unknown field"),
        ("commands:\n  install: 3\n", "commands.install", "valid string"),
        ("commands:\n  test: '  '\n", "commands.test", "use false to disable"),
        ("budgets:\n  max_tokens: -1\n", "budgets.max_tokens", "greater than 0 (got -1)"),
        ("commands:\n  lint:\n    phpcs: true\n", "commands.lint.phpcs", "False"),
        ("protected_paths: ['/etc/passwd']\n", "protected_paths", "relative path pattern"),
        ("protected_paths: ['../x']\n", "protected_paths", "relative path pattern"),
        ("profile: cobol\n", "profile", "unknown profile 'cobol'"),
        # a commit message template reads only its two names: `str.format` would follow an attribute
        ("commit_message: '{title.__class__.__mro__}'\n", "commit_message", "not {title.__class__.__mro__}"),
        ("commit_message: '{0} {title}'\n", "commit_message", "knows only {title} and {issue}, not {0}"),
        ("commit_message: '{title!r}'\n", "commit_message", "not {title!r}"),
        ("commit_message: '{title:>99999}'\n", "commit_message", "not {title:>99999}"),
        ("commit_message: 'feat: {'\n", "commit_message", "write a literal brace as {{ or }}"),
        ("commit_message: \"feat: {title}\\nSigned-off-by: x\"\n", "commit_message", "must be one line"),
        ("commit_message: 'chore: bump'\n", "commit_message", "must hold {title}"),
    ],
)
def test_an_invalid_file_names_the_field(tmp_path: Path, text: str, field: str, words: str) -> None:
    with pytest.raises(RepoConfigError) as caught:
        load_repo_config(_repo(tmp_path, text), "main")
    message = str(caught.value)
    assert message.startswith("`.forgebot.yml` on `main` is invalid:")
    assert f"- `{field}`: " in message and words in message


def test_the_most_specific_field_is_reported_once() -> None:
    with pytest.raises(RepoConfigError) as caught:
        parse_repo_config("commands:\n  lint:\n    phpcs: 7\n")
    lines = str(caught.value).splitlines()[1:]
    assert len(lines) == 1 and lines[0].startswith("- `commands.lint.phpcs`")


@pytest.mark.parametrize(
    ("text", "words"), [("a: [", "not valid YAML"), ("- profile\n", "must be a mapping")]
)
def test_malformed_yaml_is_a_clear_error(text: str, words: str) -> None:
    with pytest.raises(RepoConfigError, match=words):
        parse_repo_config(text)


def test_an_empty_file_gives_the_defaults() -> None:
    assert parse_repo_config("# nothing yet\n") == RepoConfig()


def test_an_oversized_file_is_refused(tmp_path: Path) -> None:
    padding = "# " + "x" * 78 + "\n"
    text = padding * (MAX_CONFIG_BYTES // len(padding) + 1)
    with pytest.raises(RepoConfigError, match="larger than"):
        load_repo_config(_repo(tmp_path, text), "main")


@pytest.mark.parametrize("branch", ["missing", "--output=/tmp/x", "main..other", "-h"])
def test_a_bad_or_missing_default_branch_is_an_error(tmp_path: Path, branch: str) -> None:
    with pytest.raises(RepoConfigError, match="branch"):
        load_repo_config(_repo(tmp_path, None), branch)


def test_a_directory_named_like_the_file_is_an_error(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".forgebot.yml").mkdir(parents=True)
    (repo / ".forgebot.yml" / "x").write_text("x\n")
    with pytest.raises(RepoConfigError, match="not a file"):
        load_repo_config(init_repo(repo), "main")


def test_a_commit_message_template_gives_each_commit_its_first_line() -> None:
    config = parse_repo_config("commit_message: 'feat({{core}}): {title} (#{issue})'\n")
    assert config.commit_subject("Add multiply", 23) == "feat({core}): Add multiply (#23)"
    assert parse_repo_config("").commit_subject("Add multiply", 23) == "Add multiply"


def test_lint_false_drops_every_linter_and_overrides_keep_the_others() -> None:
    assert parse_repo_config("profile: php\ncommands:\n  lint: false\n").resolve_profile().lint == ()
    profile = parse_repo_config("profile: php\ncommands:\n  lint:\n    phpcs: false\n").resolve_profile()
    assert [spec.name for spec in profile.lint] == ["php-lint"]
    install = (
        parse_repo_config("profile: php\ncommands:\n  install: composer install --no-scripts\n").resolve_profile()
        .install
    )
    assert install is not None and install.network and install.when_files == ()


@pytest.mark.parametrize(
    ("path", "protected"),
    [
        ("migrations/2024_01_01_create_users.php", True),
        (".github/workflows/ci.yml", True),
        ("composer.lock", True),
        ("./composer.lock", True),
        ("src/migrations.php", False),
        ("src/App.php", False),
    ],
)
def test_protected_paths(path: str, protected: bool) -> None:
    config = parse_repo_config(VALID)
    assert config.is_protected(path) is protected


def test_aliases_nesting_and_size_are_bounded() -> None:
    """The work a file can cause is bounded by its size: YAML aliases, nesting and bytes."""
    bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{n}: &{n} [{','.join(['*' + p] * 10)}]\n" for p, n in zip("abcdefg", "bcdefgh", strict=True))
    with pytest.raises(RepoConfigError, match="more than 20000 values"):
        parse_repo_config(bomb)
    with pytest.raises(RepoConfigError, match="not valid YAML|nested too deeply"):
        parse_repo_config("profile: " + "[" * 5000 + "]" * 5000)
    with pytest.raises(RepoConfigError, match="larger than 65536 bytes"):
        parse_repo_config("profile: php\n" + "#" * 70_000)


def test_thousands_of_invalid_fields_are_counted_not_listed() -> None:
    with pytest.raises(RepoConfigError) as refused:
        parse_repo_config("commands:\n  lint: {" + ",".join(f"k{i}: 1" for i in range(3000)) + "}\n")
    lines = str(refused.value).splitlines()
    assert len(lines) == 22 and lines[-1] == "- … and 2980 more invalid fields"
    assert lines[1] == "- `commands.lint.k0`: Input should be a valid string or Input should be False (got 1)"

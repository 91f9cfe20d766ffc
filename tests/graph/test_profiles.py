"""Profiles load from their TOML files, validate their commands, and pair with a standards text."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

import standards
from project.profiles import CommandSpec, Profile, ProfileError, available_profiles, load_profile


def test_every_shipped_profile_loads_and_has_its_standards() -> None:
    names = available_profiles()
    assert {"php", "python"} <= set(names)
    for name in names:
        profile = load_profile(name)
        assert profile.name == name
        assert profile.test is not None and profile.lint
        assert len(standards.load(profile.standards)) > 200


def test_php_profile_never_runs_composer_scripts_and_prefers_the_project_phpunit() -> None:
    php = load_profile("php")
    assert php.install is not None and php.install.network
    assert "--no-scripts" in php.install.run and "--no-plugins" in php.install.run
    assert php.install.when_files == ("composer.json",)
    assert php.test is not None and php.test.tools == ("vendor/bin/phpunit", "phpunit")
    assert php.classifier == "phpunit" and php.parser == "php" and not php.search_only
    assert [spec.name for spec in php.lint] == ["php-lint", "phpcs", "phpcs"]
    assert "PSR12" in php.lint[2].run


def test_python_profile_reads_python_into_the_graph() -> None:
    python = load_profile("python")
    assert python.parser == "python" and not python.search_only
    assert python.classifier == "pytest"
    assert python.env["PYTHONDONTWRITEBYTECODE"] == "1"


@pytest.mark.parametrize("name", ["typescript", "javascript"])
def test_script_profiles_run_the_packages_own_scripts_without_lifecycle_scripts(name: str) -> None:
    profile = load_profile(name)
    assert profile.parser == name and profile.classifier == "node" and profile.standards == name
    assert profile.install is not None and profile.install.network and profile.install.tools == ("npm",)
    assert profile.install.run.count("--ignore-scripts") == 2  # `npm ci` and `npm install` alike
    assert profile.test is not None and profile.test.run == "{tool} run --if-present test"
    assert [(spec.name, spec.when_files) for spec in profile.lint] == [
        ("tsc", ("tsconfig.json",)), ("lint", ("package.json",))]
    assert "never `var`" in standards.load(name)


@pytest.mark.parametrize("name", ["cobol", "../php", "PHP", ""])
def test_an_unknown_or_malformed_name_is_refused(name: str) -> None:
    with pytest.raises(ProfileError) as caught:
        load_profile(name)
    assert "php" in str(caught.value) or "invalid" in str(caught.value)


def test_unknown_profile_lists_the_known_ones() -> None:
    with pytest.raises(ProfileError, match=r"unknown profile 'cobol' \(known: javascript, php, python, typescript"):
        load_profile("cobol")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"run": "{tool} -l"}, "lists no tools"),
        ({"run": "php -l {file}"}, "per_file"),
        ({"run": "php -l", "per_file": True}, "per_file"),
        ({"run": "x {file} {files}", "per_file": True}, "both"),
        ({"run": "x", "colour": "red"}, "Extra inputs"),
    ],
)
def test_command_placeholders_must_match_their_settings(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        CommandSpec.model_validate({"name": "lint", **fields})


def test_takes_files_follows_the_placeholders() -> None:
    assert CommandSpec(name="a", run="phpcs {files}").takes_files
    assert CommandSpec(name="b", run="php -l {file}", per_file=True).takes_files
    assert not CommandSpec(name="c", run="phpunit").takes_files


def test_a_new_language_is_only_data() -> None:
    # What a `ruby.toml` would hold validates with no code change; the table names name the commands.
    ruby = Profile.model_validate(
        {
            "name": "ruby",
            "language": "ruby",
            "standards": "ruby",
            "file_globs": ["*.rb"],
            "install": {"run": "bundle install", "when_files": ["Gemfile"], "network": True},
            "test": {"run": "bundle exec rspec"},
            "lint": [{"name": "rubocop", "run": "{tool} {files}", "tools": ["rubocop"]}],
        }
    )
    assert ruby.install is not None and ruby.install.name == "install"
    assert ruby.search_only and ruby.classifier is None


def test_standards_refuse_unknown_and_malformed_names() -> None:
    assert "PSR-12" in standards.load("php") and "strict_types" in standards.load("php")
    assert "pytest" in standards.load("python")
    with pytest.raises(LookupError, match="known: .*php"):
        standards.load("cobol")
    with pytest.raises(ValueError, match="invalid"):
        standards.load("../README")

"""The console's tests use the end-to-end tests' served fixture repository."""

from tests.e2e.conftest import origin_url  # noqa: F401  (a fixture, used by name)

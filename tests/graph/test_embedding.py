"""The embedder setting: offline by default (shipped with the package), an OpenAI-compatible endpoint,
or off; the endpoint's key goes to that endpoint only."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from foundation.settings import EmbedderSettings, Settings
from project.embedding import command_embedder, embedder_for
from project.index.embed import EmbeddingError, HttpEmbedder
from project.index.minilm import MiniLMEmbedder
from tests.fakes.embeddings_http import EmbeddingsState, create_embeddings_app
from tests.fakes.server import serving


def test_default_is_the_offline_model_built_once_per_process() -> None:
    settings = Settings(_env_file=None, _secrets_dir=None)  # type: ignore[call-arg]
    assert settings.embedder.kind == "offline"
    first = embedder_for(settings.embedder)
    assert isinstance(first, MiniLMEmbedder) and first.dimension == 384
    assert embedder_for(EmbedderSettings()) is first


def _threads(embedder: object) -> int:
    assert isinstance(embedder, MiniLMEmbedder)
    return int(embedder._session.get_session_options().intra_op_num_threads)


def test_a_command_the_user_waits_on_embeds_on_every_core_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    """`forgebot index` embedded on one core of two, the worker's default (it keeps a core for tasks):
    rich's 2,481 chunks took 92 s, on both cores 49 s. A set FORGEBOT_EMBEDDER__THREADS wins."""
    for name in [n for n in __import__("os").environ if n.startswith("FORGEBOT_")]:
        monkeypatch.delenv(name)
    default = Settings(_env_file=None, _secrets_dir=None).embedder  # type: ignore[call-arg]
    assert _threads(embedder_for(default)) == 1  # the service's
    assert _threads(command_embedder(default)) == 0  # onnxruntime's: every core
    monkeypatch.setenv("FORGEBOT_EMBEDDER__THREADS", "1")
    told = Settings(_env_file=None, _secrets_dir=None).embedder  # type: ignore[call-arg]
    assert _threads(command_embedder(told)) == 1
    assert command_embedder(EmbedderSettings(kind="off")) is None


def test_off_means_no_vector_leg() -> None:
    assert embedder_for(EmbedderSettings(kind="off")) is None


def test_an_incomplete_endpoint_setting_is_refused_with_what_is_missing() -> None:
    with pytest.raises(ValidationError, match="needs base_url, model, dimension"):
        EmbedderSettings(kind="http")
    with pytest.raises(ValidationError, match="http"):
        EmbedderSettings(kind="http", base_url="file:///etc/passwd", model="m", dimension=3)


def test_the_endpoint_from_the_environment_embeds_over_http_with_its_key_and_headers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = EmbeddingsState(dimension=16)
    with serving(create_embeddings_app(state)) as server:
        for name, value in {"KIND": "http", "BASE_URL": f"{server.url}/v1", "MODEL": "code-embed",
                            "DIMENSION": "16", "API_KEY": "sk-embed",
                            "HEADERS": '{"Ocp-Apim-Subscription-Key": "apim-key"}'}.items():
            monkeypatch.setenv(f"FORGEBOT_EMBEDDER__{name}", value)
        settings = Settings(_env_file=None, _secrets_dir=None)  # type: ignore[call-arg]
        embedder = embedder_for(settings.embedder)
        assert isinstance(embedder, HttpEmbedder) and embedder.model_id == "code-embed"
        rows = embedder.embed(["retry the request", "format a price"])
    assert rows.shape == (2, 16)
    (path, headers, body), = state.requests
    assert path == "/v1/embeddings" and headers["authorization"] == "Bearer sk-embed"
    assert headers["ocp-apim-subscription-key"] == "apim-key"  # a gateway's own key header, as configured
    assert body == {"model": "code-embed", "input": ["retry the request", "format a price"]}


def test_a_redirect_never_carries_the_key_to_another_host() -> None:
    """Attack: the configured endpoint (or whoever answers for it) redirects elsewhere."""
    other = EmbeddingsState()
    with serving(create_embeddings_app(other)) as thief:
        first = EmbeddingsState(redirect_to=thief.url)
        with serving(create_embeddings_app(first)) as endpoint:
            config = EmbedderSettings(kind="http", base_url=f"{endpoint.url}/elsewhere/v1", model="m",
                                      dimension=16, api_key="sk-secret")
            embedder = embedder_for(config)
            assert embedder is not None
            with pytest.raises(EmbeddingError) as caught:
                embedder.embed(["x"])
    assert "sk-secret" not in str(caught.value)
    assert [r[0] for r in first.requests] == ["/elsewhere/v1/embeddings"]
    assert other.requests == []  # the redirect was not followed

# syntax=docker/dockerfile:1
# One image for `forgebot web`, `forgebot worker` and `forgebot serve` (the Helm chart runs it twice
# with different args). Build: docker build -t forgebot .
#
# Stage 1 builds a virtualenv with forgebot, its dependencies and the offline embedding model;
# stage 2 adds git, PHP and Composer (the PHP profile runs the target project's install, tests and
# lint) and runs as an unprivileged user. Nothing is downloaded at run time.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# A compiler for forgebot's C walk of parsed trees (hatch_build.py) and for a dependency that has no
# wheel for this platform; it stays in this stage.
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/forgebot
WORKDIR /src
COPY pyproject.toml README.md hatch_build.py ./
COPY bot ./bot
COPY graph ./graph
COPY project ./project
COPY foundation ./foundation
COPY prompts ./prompts
COPY standards ./standards
# The offline embedding model ships in project/ (int8 ONNX and its tokenizer; onnxruntime, no PyTorch);
# both optional providers' extras, so one image serves every FORGEBOT_LLM__PROVIDER
RUN /opt/forgebot/bin/pip install '.[anthropic,ollama]'
# Fail the build, not the first task, when the CLI or the model is missing or fails its checksum, or
# the C walk of parsed trees was not compiled (the index would be slower, silently).
RUN /opt/forgebot/bin/forgebot --help >/dev/null \
 && /opt/forgebot/bin/python -c "from project.index.minilm import MiniLMEmbedder; MiniLMEmbedder()" \
 && /opt/forgebot/bin/python -c "from project.index import treewalk; assert treewalk.compiled(), treewalk.described()"

FROM ${PYTHON_IMAGE} AS runtime
ARG DEBIAN_FRONTEND=noninteractive
# git: mirrors and worktrees; php-* + composer: the PHP profile (phpunit and phpcs are fallbacks
# when a project has no vendor/bin copy); util-linux: unshare and nsenter for the check sandbox;
# tini: PID 1 that forwards SIGTERM and reaps the check commands' orphans; openssh-client: ssh-keygen, which
# signs the bot's commits when FORGEBOT_WORKSPACE__SIGNING_KEY is set.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates git tini util-linux unzip openssh-client \
      php-cli php-xml php-mbstring php-curl php-zip php-intl php-sqlite3 php-bcmath \
      composer phpunit php-codesniffer \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 forgebot \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/forgebot --create-home \
      --shell /usr/sbin/nologin forgebot \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/forgebot \
 && install -d -o root -g 10001 -m 0750 /etc/forgebot/secrets
COPY --from=build /opt/forgebot /opt/forgebot
ENV PATH=/opt/forgebot/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/home/forgebot \
    COMPOSER_HOME=/tmp/composer \
    COMPOSER_NO_INTERACTION=1 \
    HF_HUB_OFFLINE=1 \
    FORGEBOT_DATA_DIR=/var/lib/forgebot \
    FORGEBOT_HOST=0.0.0.0 \
    FORGEBOT_PORT=8080
USER 10001:10001
WORKDIR /var/lib/forgebot
VOLUME ["/var/lib/forgebot"]
EXPOSE 8080
# For `serve` and `web`; a `worker` container has no HTTP port: run it with --no-healthcheck
# (Kubernetes ignores HEALTHCHECK and uses the chart's probes).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('FORGEBOT_PORT', '8080') + '/healthz', timeout=4)"]
ENTRYPOINT ["tini", "--", "forgebot"]
CMD ["serve"]

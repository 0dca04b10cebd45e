# torchbot: slim Python base, non-root user, the package installed, `torchbot` as entry point.
FROM python:3.11-slim

RUN apt-get update \
 && apt-get install -y --no-install-recommends git nix-bin \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 torchbot

WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY release ./release
COPY config ./config
RUN pip install --no-cache-dir .

USER torchbot
WORKDIR /home/torchbot
ENV TORCHBOT_STATE_DB=sqlite:////home/torchbot/torchbot-state.sqlite
ENTRYPOINT ["torchbot"]
CMD ["serve", "--socket"]

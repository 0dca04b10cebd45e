# torchbot: slim Python base, non-root user, the package installed, `torchbot` as entry point.
#
# Builds: the image carries Debian's Nix (nix-build) in single-user mode, owned by the torchbot
# user, so local builds run as that user with no daemon and no root (`torchbot serve` says at
# start "local builds use nix-build ...": flox is not packaged for Debian, so the local backend
# builds each recipe with nix-build of the same expression). Nix's sandbox needs user namespaces,
# which containers rarely allow, so it is off (Debian's default). A real PyTorch build downloads
# its pinned nixpkgs and what cache.nixos.org has, and needs hours and the disk of a build host:
# for CUDA variants send builds to CI instead (`--backend github`; scheduled builds: TORCHBOT_SCHEDULE_BUILD_BACKEND).
FROM python:3.11-slim

RUN apt-get update \
 && apt-get install -y --no-install-recommends git nix-bin ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 torchbot \
 # single-user Nix: the store and its database belong to the user that builds
 && mkdir -p /nix/store /nix/var/nix \
 && chown -R torchbot:torchbot /nix \
 && mkdir -p /etc/nix && printf 'sandbox = false\nbuild-users-group =\n' > /etc/nix/nix.conf \
 # repositories mounted from the host belong to another uid; git refuses those ("dubious
 # ownership") unless told they are safe. torchbot only reads them and commits through git.
 && git config --system --add safe.directory '*' \
 # state, logs and caches live under one volume (below), owned by torchbot
 && mkdir -p /var/lib/torchbot \
 && chown torchbot:torchbot /var/lib/torchbot

WORKDIR /app
# Dependencies first, in a layer of their own: it is rebuilt only when pyproject.toml changes.
# The list is read from pyproject.toml itself (tomllib), so there is no second list to keep in
# step; setuptools is the build backend the next step uses without build isolation (no PyPI).
COPY pyproject.toml ./
RUN python -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb")); \
print("\n".join([*p["project"]["dependencies"], *p["build-system"]["requires"]]))' > /tmp/requirements.txt \
 && pip install --no-cache-dir -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt
# Then the source (.dockerignore keeps the context to pyproject.toml, README.md and the three
# packages): a code change rebuilds from here, installing torchbot alone in seconds.
COPY . ./
RUN pip install --no-cache-dir --no-deps --no-build-isolation . \
 && rm -rf build ./*.egg-info

USER torchbot
# torchbot's files go where platformdirs puts them (XDG): the state DB under $XDG_DATA_HOME/torchbot,
# the audit log and build logs under $XDG_STATE_HOME/torchbot, the recipe-facts cache under
# $XDG_CACHE_HOME/torchbot (`torchbot paths` shows them); all three in the volume. torchbot writes
# nothing in its working directory.
ENV XDG_DATA_HOME=/var/lib/torchbot/data \
    XDG_STATE_HOME=/var/lib/torchbot/state \
    XDG_CACHE_HOME=/var/lib/torchbot/cache \
    NIX_SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
WORKDIR /var/lib/torchbot
# /var/lib/torchbot: state DB, audit log, build logs, caches. /nix: the Nix store, so built and
# downloaded paths survive a new container (a named volume starts as a copy of the image's /nix).
VOLUME ["/var/lib/torchbot", "/nix"]
# `torchbot serve --http` listens on TORCHBOT_PORT (default 3000) for Slack's /slack/events;
# Socket Mode (the default command) needs no port.
EXPOSE 3000
ENTRYPOINT ["torchbot"]
CMD ["serve", "--socket"]

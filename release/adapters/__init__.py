"""Adapters: one module per external system, and the only modules of release/ that talk to one.

- ``git``      the managed repositories (GitPython and the git CLI: objects, fast-import commits,
               compare-and-swap ref moves, pushes)
- ``worktrees`` builds' temporary git worktrees, made and removed under one lock per repository
- ``nixpkgs``  nixpkgs facts over HTTP (channel heads, commits, torch and CUDA at a revision)
- ``github``   GitHub's REST API (pull requests; Actions dispatch, runs and jobs, every page)
- ``http``     the one retry policy of every HTTP client (tenacity: backoff with jitter,
               Retry-After and x-ratelimit-reset honoured, bounded time, requests counted)
- ``slack``    Slack's Web API client for announcements
- ``flox``     build processes (``flox build`` / ``nix-build``: process group, log, timeout)
- ``nix``      nix tools: a tarball's sha256 with ``nix-prefetch-url --unpack``
- ``nixeval``  what a recipe would build: its derivation path (``nix-instantiate``, read-only)
- ``nixcache`` the team's Nix binary cache (TORCHBOT_BUILD_CACHE): whether it answers

May import: config. Never a concern package, a command layer or bot/.
"""

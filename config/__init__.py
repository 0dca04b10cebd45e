"""Configuration: runtime settings and the data catalog torchbot answers from.

- ``catalog`` (+ ``data/``): the typed catalog; ``vision_branches``: the build-torchvision
  branches of the data; ``cpu_models``: CPU model numbers; ``catalog_cache``: catalogs compiled
  once and kept in the cache directory; ``naming``: package names; ``errors``, ``results``.
- ``setting_sources``: the one reader of the sources (the environment, ``.env``, ``torchbot.toml``);
  ``settings_answer``: the group of settings an answer needs (org, repositories, cache, branch
  records), their one place, read by ``ask`` without pydantic; ``setting_groups``: the other
  settings by concern (chat, git, upstream, state, builds, serve, schedule), each with its rules;
  ``settings``: the pydantic-settings model of every setting, the groups together on the one
  reader; ``setting_values``: how values are read;
  ``settings_doc`` writes the settings table of docs/settings.md from the model;
  ``checks``: value rules and the start-up checks of what settings name on disk.
- ``paths``: where torchbot's own files live (platformdirs, never the working directory);
  ``branch_records``: branches ``release branch create`` made, recorded by repository.

The foundation: imports nothing of torchbot outside config/.
"""

"""Configuration: runtime settings and the data catalog torchbot answers from.

- ``catalog`` (+ ``data/``): the typed catalog; ``vision_branches``: the build-torchvision
  branches of the data; ``cpu_models``: CPU model numbers; ``catalog_cache``: catalogs compiled
  once and kept in the cache directory; ``naming``: package names; ``errors``, ``results``.
- ``settings``: the pydantic-settings model, every field described; ``settings_doc`` writes the
  settings table of docs/settings.md from it; ``light_settings``: what ``ask`` reads without pydantic;
  ``checks``: the value rules both share and the start-up checks of what settings name on disk.
- ``paths``: where torchbot's own files live (platformdirs, never the working directory);
  ``branch_records``: branches ``release branch create`` made, recorded by repository.

The foundation: imports nothing of torchbot outside config/.
"""

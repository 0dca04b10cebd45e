"""Configuration: runtime settings and the data catalog torchbot answers from.

- ``catalog`` (+ ``data/``): the typed catalog; ``naming``: package names; ``errors``, ``results``.
- ``settings``: the pydantic-settings model, every field described; ``settings_doc`` writes the
  README's settings table from it; ``light_settings``: what ``ask`` reads without pydantic;
  ``checks``: the value rules both share and the start-up checks of what settings name on disk.
- ``paths``: where torchbot's own files live (platformdirs, never the working directory);
  ``branch_records``: branches ``release branch create`` made, recorded by repository.

The foundation: imports nothing of torchbot outside config/.
"""

"""Setting defaults shared by config.settings_answer and the catalog.
Imports nothing."""

FLOX_ORG = "your-org"

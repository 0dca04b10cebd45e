"""Setting defaults shared by config.settings (pydantic-settings) and config.light_settings.
Imports nothing."""

FLOX_ORG = "your-org"

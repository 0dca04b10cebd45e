"""Publishing succeeded builds and announcing them.

- ``publish``   publish to the Flox catalog; outbox rows in the same transaction
- ``on_github`` GitHub builds published by the workflow on their platform's runners (never here)
- ``announce``  the outbox flusher: release threads in Slack, exactly once
- ``commands``  the command layer (plan_publish) for the CLI and chat
- ``cli``       ``release publish``

May import: config, release.adapters, release.state, release.context, release.builds (not its command layer).
"""

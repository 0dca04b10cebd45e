"""The release dashboard: one model of where the release stands on every branch of each managed
repository (pins and their age, bump state, README and companion drift, builds per platform and
what is published, the next scheduled runs), rendered four ways: JSON and a terminal table
(``cli``), a GitHub issue edited in place (``issue``), an HTML page (``page``), and sentences for
chat (``words``: "why is X held?", "what changed?"; pure like ``issue`` and ``page``: the model in,
text out); Slack's Block Kit lives in ``bot/frontends/slack/dashboard.py``.

``model`` is pure: it turns plain data into the model and may import nothing of torchbot but
config and ``decisions`` (a person's decision about a bump pull request, worded; pure too).
``collect`` gathers that plain data at the edge: the repositories as their remote has
them, the release record (``release.state.record``), builds by the commit they ran at, publishes,
nixpkgs, GitHub. ``commands`` (the command layer) may import the other release packages' command
layers and the timetable (``release.timetable``, for the next runs), never the schedule; the
schedule and the front ends import the dashboard.
"""

"""The release schedule: APScheduler jobs (pin bumps, build polling, publishing, the
announcement flusher) persisted in the state DB, and ``torchbot schedule``.

May import: everything in release/ (it drives the other concerns through their command layers).
"""

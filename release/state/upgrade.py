"""Unique keys that changed since an older torchbot made the state DB: publishes, releases,
failed publishes and local build locks were unique per (package, branch, pin) / (branch, pin) /
(branch, package, pin) / (branch, package) before they were kept per repository
(build-torchvision's ``main`` shares branch and package names with build-pytorch's). ``rekey``
drops the older constraint and creates the newer unique indexes (``tables``, ``record``), keeping every row:

- PostgreSQL: ``ALTER TABLE … DROP CONSTRAINT``, then ``CREATE UNIQUE INDEX``;
- SQLite, which cannot drop a table's constraint: the table is made again, in one transaction
  (its rows copied aside, the table dropped and created as the models say, the rows copied back).

Idempotent, and safe when two processes start at once (the loser finds the work done). A table
that cannot be rekeyed is one line naming TORCHBOT_STATE_DB. May import sqlalchemy and config.
"""

from __future__ import annotations

import warnings

from sqlalchemy import Table, inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SAWarning, SQLAlchemyError
from sqlalchemy.schema import CreateIndex

from config.errors import ConfigError

OLD_KEYS = {  # table -> the columns of its older unique constraint
    "publishes": {"package", "branch", "pin"},
    "releases": {"branch", "pin"},
    "publish_failures": {"branch", "package", "pin"},
    "build_locks": {"branch", "package"},
}


def _old_constraints(bind, table: str) -> list[str | None]:
    with warnings.catch_warnings():  # SQLite's reflection says it skips the expression indexes: they are ours
        warnings.simplefilter("ignore", SAWarning)
        found = inspect(bind).get_unique_constraints(table)
    return [u.get("name") for u in found if set(u["column_names"]) == OLD_KEYS[table]]


def rekey(engine: Engine, tables: dict[str, Table]) -> None:
    """Put each table of ``OLD_KEYS`` on its per-repository key (``tables``: name -> its model's Table)."""
    have = set(inspect(engine).get_table_names())
    for name in OLD_KEYS:
        if name not in have or name not in tables:
            continue
        try:
            if _old_constraints(engine, name):
                (_rebuild_sqlite if engine.dialect.name == "sqlite" else _drop_constraints)(engine, tables[name])
            with engine.begin() as conn:
                for index in tables[name].indexes:
                    conn.execute(CreateIndex(index, if_not_exists=True))
        except SQLAlchemyError as err:
            if _old_constraints(engine, name):  # not another process's upgrade that came first
                why = str(getattr(err, "orig", err)).splitlines()[0][:200]
                raise ConfigError(f"TORCHBOT_STATE_DB: cannot key its table {name} by repository: {why}") from None


def _drop_constraints(engine: Engine, table: Table) -> None:
    with engine.begin() as conn:
        for constraint in _old_constraints(engine, table.name):
            conn.execute(text(f'ALTER TABLE {table.name} DROP CONSTRAINT IF EXISTS "{constraint}"'))


def _rebuild_sqlite(engine: Engine, table: Table) -> None:
    """The table made again as its model says, with its rows (SQLite's way to drop a constraint)."""
    aside = f"{table.name}_before_repo"
    with engine.begin() as conn:
        conn.exec_driver_sql("BEGIN IMMEDIATE")  # DDL too in the one transaction (pysqlite begins only before DML)
        if not _old_constraints(conn, table.name):  # another process did it meanwhile
            return
        columns = {c["name"] for c in inspect(conn).get_columns(table.name)}
        shared = ", ".join(f'"{c.name}"' for c in table.columns if c.name in columns)
        conn.execute(text(f"DROP TABLE IF EXISTS {aside}"))
        conn.execute(text(f"CREATE TABLE {aside} AS SELECT * FROM {table.name}"))
        conn.execute(text(f"DROP TABLE {table.name}"))
        table.create(conn)
        conn.execute(text(f"INSERT INTO {table.name} ({shared}) SELECT {shared} FROM {aside}"))
        conn.execute(text(f"DROP TABLE {aside}"))

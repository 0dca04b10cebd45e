"""A state DB made by an older torchbot opens in a newer one: tables added since are created and
nullable columns added since are added, on SQLite and on a real PostgreSQL server; a missing
column that must hold a value is one clear line naming TORCHBOT_STATE_DB."""

from __future__ import annotations

import pytest
from sqlalchemy import MetaData, Table, create_engine, inspect, text

from config.errors import ConfigError
from release.state import GithubRun, open_state
from release.state.tables import Base
from tests.support.fixtures_postgres import postgres  # noqa: F401  (fixture)

NEWER = ("notice", "follower", "outcome", "notified")  # github_runs columns added after the table was


def _older_db(url: str, drop: tuple[str, ...]) -> None:
    """The current schema, less ``drop`` from github_runs: what an older torchbot left."""
    engine = create_engine(url)
    Base.metadata.create_all(engine)
    runs = Base.metadata.tables["github_runs"]
    older = Table(runs.name, MetaData(), *(c._copy() for c in runs.columns if c.name not in drop))
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE github_runs"))
        conn.execute(text("DROP TABLE slack_deliveries"))
    older.create(engine)
    engine.dispose()


def _opens_and_keeps_runs(url: str) -> None:
    _older_db(url, NEWER)
    st = open_state(url)
    with st.session() as s:
        s.add(GithubRun(request_id="r1", branch="main", ref="main", workflow="build.yml", jobs=3,
                        notice='{"channel": "C1"}', follower="host:1"))
    with st.session() as s:
        run = s.query(GithubRun).filter_by(request_id="r1").one()
        assert (run.notice, run.follower, run.outcome, run.notified) == ('{"channel": "C1"}', "host:1", None, None)
    tables = set(inspect(st.engine).get_table_names())
    assert "slack_deliveries" in tables


def test_an_older_sqlite_state_db_gets_the_newer_columns_and_tables(tmp_path):
    _opens_and_keeps_runs(f"sqlite:///{tmp_path / 'old.sqlite'}")


def test_an_older_postgres_state_db_gets_the_newer_columns_and_tables(postgres):  # noqa: F811
    _opens_and_keeps_runs(postgres.new_database())


def test_a_missing_column_that_must_hold_a_value_is_one_line_naming_the_setting(tmp_path):
    url = f"sqlite:///{tmp_path / 'older.sqlite'}"
    _older_db(url, ("branch",))
    with pytest.raises(ConfigError, match=r"^TORCHBOT_STATE_DB: its table github_runs lacks the column branch"):
        open_state(url)


def test_rows_written_before_repositories_were_recorded_stay_build_pytorchs(tmp_path):
    """An older DB's builds and runs (no ``repo`` column) gain it, empty: TORCHBOT_GITHUB_REPO's
    rows, still found as the last success of their branch; a companion's rows are apart."""
    from release.state import Build

    url = f"sqlite:///{tmp_path / 'before-repos.sqlite'}"
    engine = create_engine(url)
    Base.metadata.create_all(engine)
    with engine.begin() as conn:
        for name in ("builds", "github_runs"):
            conn.execute(text(f"DROP TABLE {name}"))
    for name in ("builds", "github_runs"):
        table = Base.metadata.tables[name]
        Table(table.name, MetaData(), *(c._copy() for c in table.columns if c.name != "repo")).create(engine)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO builds (package, branch, state, backend, created) "
                          "VALUES ('torchvision-python313-cuda12_8-sm61-avx', 'main', 'succeeded', 'github', "
                          "'2026-01-01 00:00:00')"))
    engine.dispose()
    st = open_state(url)
    assert "repo" in {c["name"] for c in inspect(st.engine).get_columns("builds")}
    assert "repo" in {c["name"] for c in inspect(st.engine).get_columns("github_runs")}
    assert list(st.last_success("main")) == ["torchvision-python313-cuda12_8-sm61-avx"]
    assert st.last_success("main", "acme/build-torchvision") == {}
    with st.session() as s:
        s.add(Build(package="torchvision-python313-cuda12_8-sm61-avx", branch="main", state="failed",
                    backend="github", repo="acme/build-torchvision"))
    assert sorted((b.repo or "", b.state) for b in st.builds("main")) == [
        ("", "succeeded"), ("acme/build-torchvision", "failed")]  # the same branch and name, two rows


PKG = "torchvision-python313-cuda12_8-sm61-avx"
KEYED = {"publishes": ("package", "branch", "pin"), "releases": ("branch", "pin"),
         "publish_failures": ("branch", "package", "pin")}  # the unique keys before repositories


def _before_repositories(url: str) -> None:
    """The publishes, releases and failed publishes of a torchbot that kept them without a
    repository: no ``repo`` column, unique per (package, branch, pin) and (branch, pin), with a
    release, its publish and its announcement in them."""
    from sqlalchemy import UniqueConstraint

    engine = create_engine(url)
    Base.metadata.create_all(engine)
    with engine.begin() as conn:
        for name in ("outbox", *KEYED):
            conn.execute(text(f"DROP TABLE {name}"))
    older = MetaData()
    for name in ("builds", *KEYED):
        Table(name, older, *(c._copy() for c in Base.metadata.tables[name].columns if c.name != "repo"
                             or name == "builds"),
              *([UniqueConstraint(*KEYED[name], name=f"uq_{name}_old")] if name in KEYED else []))
    older.create_all(engine, tables=[older.tables[n] for n in KEYED])
    Base.metadata.tables["outbox"].create(engine)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO releases (branch, pin, total, info, created) "
                          "VALUES ('main', 'abc', 1, '{}', '2026-01-01 00:00:00')"))
        conn.execute(text(f"INSERT INTO publishes (package, branch, pin, published) "
                          f"VALUES ('{PKG}', 'main', 'abc', '2026-01-01 00:00:00')"))
        conn.execute(text("INSERT INTO outbox (release_id, kind, client_msg_id, created) "
                          "SELECT id, 'parent', 'm1', '2026-01-01 00:00:00' FROM releases"))
    engine.dispose()


def _keyed_by_repository(url: str) -> None:
    from sqlalchemy.exc import IntegrityError

    from release.state import Outbox, Publish, Release

    _before_repositories(url)
    st = open_state(url)
    with st.session() as s:  # kept, as the first repository's
        assert [(p.package, p.repo) for p in s.query(Publish)] == [(PKG, None)]
        (rel,) = s.query(Release)
        assert (rel.branch, rel.repo) == ("main", None)
        assert [o.release_id for o in s.query(Outbox)] == [rel.id]
    with st.session() as s:  # build-torchvision's main at the same pin: its own publish and release
        s.add(Publish(package=PKG, branch="main", pin="abc", repo="acme/build-torchvision"))
        s.add(Release(branch="main", pin="abc", repo="acme/build-torchvision"))
    for row in (Publish(package=PKG, branch="main", pin="abc"), Release(branch="main", pin="abc"),
                Publish(package=PKG, branch="main", pin="abc", repo="acme/build-torchvision")):
        with pytest.raises(IntegrityError), st.session() as s:  # still once per repository
            s.add(row)
    open_state.__globals__["_STATES"].pop(url, None)
    again = open_state(url)  # a second start finds nothing left to do
    with again.session() as s:
        assert s.query(Publish).count() == 2 and s.query(Release).count() == 2


def test_an_older_sqlite_state_dbs_publishes_and_releases_are_kept_per_repository(tmp_path):
    _keyed_by_repository(f"sqlite:///{tmp_path / 'before-repos.sqlite'}")


def test_an_older_postgres_state_dbs_publishes_and_releases_are_kept_per_repository(postgres):  # noqa: F811
    _keyed_by_repository(postgres.new_database())


def _locks_keyed_by_repository(url: str) -> None:
    """An older DB's build locks (unique per (branch, package), no ``repo`` column) keep their rows,
    as the first repository's, and are unique per repository after: build-torchvision's lock of
    the same branch and variant is its own."""
    from sqlalchemy import UniqueConstraint
    from sqlalchemy.exc import IntegrityError

    from release.state import BuildLock

    engine = create_engine(url)
    Base.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE build_locks"))
    locks = Base.metadata.tables["build_locks"]
    Table(locks.name, MetaData(), *(c._copy() for c in locks.columns if c.name != "repo"),
          UniqueConstraint("branch", "package", name="uq_build_lock")).create(engine)
    with engine.begin() as conn:
        conn.execute(text(f"INSERT INTO build_locks (branch, package, build_id, run_key, owner, since) "
                          f"VALUES ('main', '{PKG}', 7, 'k1', 'host:1', '2026-01-01 00:00:00')"))
    engine.dispose()
    st = open_state(url)
    with st.session() as s:
        assert [(lk.package, lk.build_id, lk.repo) for lk in s.query(BuildLock)] == [(PKG, 7, None)]
        s.add(BuildLock(branch="main", package=PKG, build_id=8, run_key="k2", owner="host:1",
                        repo="acme/build-torchvision"))
    for repo in (None, "acme/build-torchvision"):
        with pytest.raises(IntegrityError), st.session() as s:  # still one build of a variant per repository
            s.add(BuildLock(branch="main", package=PKG, build_id=9, run_key="k3", owner="host:1", repo=repo))
    open_state.__globals__["_STATES"].pop(url, None)
    with open_state(url).session() as s:  # a second start finds nothing left to do
        assert s.query(BuildLock).count() == 2


def test_an_older_sqlite_state_dbs_build_locks_are_kept_per_repository(tmp_path):
    _locks_keyed_by_repository(f"sqlite:///{tmp_path / 'locks.sqlite'}")


def test_an_older_postgres_state_dbs_build_locks_are_kept_per_repository(postgres):  # noqa: F811
    _locks_keyed_by_repository(postgres.new_database())

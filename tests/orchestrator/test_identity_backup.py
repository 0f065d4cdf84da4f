"""Zitadel's database backed up and restored as the identity chart's CronJob and docs/operating.md do it,
against Debian's PostgreSQL server (a throwaway cluster of the test's own on loopback) and moto's S3.

The database is made as ``zitadel init`` makes Zitadel's: by the superuser, with all of it granted to
Zitadel's user, which then makes its schemas and tables and so owns them. Four tables shaped like
Zitadel's stand for its ~100 (the event store's events and the users, humans and grants projections):
what a dump and a restore do depends on ownership, grants, keys and types, not on how many tables
there are. The CronJob's own commands, read from the rendered chart, dump it as Zitadel's user and seal
it into the bucket; the database is dropped; the documented restore fetches and opens the newest dump
and ``pg_restore`` (as the superuser, the dump on its standard input as ``kubectl exec -i`` gives it)
brings it back: the same rows, and Zitadel's user writes again.

The test fails, not skips, where PostgreSQL's server is missing: ``make install`` installs Debian's
``postgresql``. PostgreSQL refuses to run as root, so under root (CI) the server runs as the package's
``postgres`` user; it is stopped, by its pid, and its directory removed, also when a test fails.
"""

from __future__ import annotations

import base64
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python
import pytest
from moto.server import ThreadedMotoServer

from devstack.net import free_port
from orchestrator.services.backup import S3Settings, S3Store
from tests.addresses import BACKUP, address
from tests.charts import kit
from tests.charts.test_identity_chart import CHART, MINIMAL, NAMESPACE, RELEASE

ROOT = Path(__file__).resolve().parents[2]
HOST = address(BACKUP, 4)
KEY = bytes(range(32))
SUPERUSER, SUPERUSER_PASSWORD = "postgres", "postgres-password"
ZITADEL, ZITADEL_PASSWORD = "zitadel", "zitadel-password"
BUCKET, PREFIX = "identity-backups", "flexplane"  # moto keeps buckets per process: a name of its own
# The chart's mount of the dump's scratch volume, replaced by a directory of the test's.
DUMP_MOUNT = "/dump"

# What `zitadel init` does as the admin user (cmd/initialise: the user, the database, the grant).
INIT = f"""
CREATE ROLE {ZITADEL} LOGIN PASSWORD '{ZITADEL_PASSWORD}';
CREATE DATABASE zitadel;
GRANT ALL ON DATABASE zitadel TO {ZITADEL};
"""
# What Zitadel then makes as its own user, and a platform's users: the first admin, the orchestrator's
# service user, a user with a VDC's role; their events.
SCHEMA_AND_USERS = """
CREATE SCHEMA eventstore;
CREATE TABLE eventstore.events2 (
    instance_id TEXT NOT NULL, aggregate_type TEXT NOT NULL, aggregate_id TEXT NOT NULL,
    event_type TEXT NOT NULL, "sequence" BIGINT NOT NULL, revision SMALLINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(), payload JSONB, creator TEXT NOT NULL,
    "owner" TEXT NOT NULL, "position" DECIMAL NOT NULL, in_tx_order INTEGER NOT NULL,
    PRIMARY KEY (instance_id, aggregate_type, aggregate_id, "sequence")
);
CREATE SCHEMA projections;
CREATE TABLE projections.users14 (
    id TEXT NOT NULL, instance_id TEXT NOT NULL, resource_owner TEXT NOT NULL, username TEXT NOT NULL,
    state SMALLINT NOT NULL, type SMALLINT NOT NULL, creation_date TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_id, id)
);
CREATE TABLE projections.users14_humans (
    user_id TEXT NOT NULL, instance_id TEXT NOT NULL, first_name TEXT NOT NULL, last_name TEXT NOT NULL,
    email TEXT NOT NULL, password_hash TEXT,
    PRIMARY KEY (instance_id, user_id),
    FOREIGN KEY (instance_id, user_id) REFERENCES projections.users14 (instance_id, id) ON DELETE CASCADE
);
CREATE TABLE projections.user_grants5 (
    id TEXT NOT NULL, instance_id TEXT NOT NULL, user_id TEXT NOT NULL, project_id TEXT NOT NULL,
    roles TEXT[] NOT NULL,
    PRIMARY KEY (instance_id, id),
    FOREIGN KEY (instance_id, user_id) REFERENCES projections.users14 (instance_id, id) ON DELETE CASCADE
);
CREATE INDEX user_grants5_user_idx ON projections.user_grants5 (user_id);

INSERT INTO projections.users14 (id, instance_id, resource_owner, username, state, type) VALUES
    ('100', 'i1', 'o1', 'zitadel-admin', 1, 1),
    ('101', 'i1', 'o1', 'flexplane-orchestrator', 1, 2),
    ('102', 'i1', 'o2', 'alice', 1, 1);
INSERT INTO projections.users14_humans VALUES
    ('100', 'i1', 'Platform', 'Admin', 'admin@id.example.com', '$2a$14$adminhash'),
    ('102', 'i1', 'Alice', 'Liddell', 'alice@acme.example', '$2a$14$alicehash');
INSERT INTO projections.user_grants5 VALUES
    ('200', 'i1', '100', 'flexplane', ARRAY['ADMIN']),
    ('201', 'i1', '102', 'flexplane', ARRAY['USER', 'vdc:alpha']);
INSERT INTO eventstore.events2
    (instance_id, aggregate_type, aggregate_id, event_type, "sequence", revision, payload, creator, "owner",
     "position", in_tx_order)
VALUES
    ('i1', 'user', '100', 'user.human.added', 1, 1, '{"userName": "zitadel-admin"}', 'SYSTEM', 'o1', 1.1, 0),
    ('i1', 'user', '101', 'user.machine.added', 1, 1, '{"userName": "flexplane-orchestrator"}', 'SYSTEM',
     'o1', 1.2, 0),
    ('i1', 'user', '102', 'user.human.added', 1, 1, '{"userName": "alice"}', '100', 'o2', 2.1, 0),
    ('i1', 'usergrant', '201', 'user.grant.added', 1, 1, '{"roleKeys": ["USER", "vdc:alpha"]}', '100', 'o2',
     2.2, 0);
"""
TABLES = (
    "eventstore.events2",
    "projections.users14",
    "projections.users14_humans",
    "projections.user_grants5",
)


def server_binaries() -> Path:
    """The newest installed PostgreSQL's bin directory (Debian: /usr/lib/postgresql/<major>/bin)."""
    found = sorted(
        (p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/postgres")),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if not found:
        pytest.fail("PostgreSQL's server is not installed: make install installs Debian's postgresql")
    return found[-1]


@dataclass
class Postgres:
    """A throwaway PostgreSQL cluster listening on a loopback address, and its client tools."""

    bin: Path
    host: str
    port: int
    directory: Path

    def env(self, user: str, password: str, database: str) -> dict[str, str]:
        return {
            **os.environ,
            "PGHOST": self.host,
            "PGPORT": str(self.port),
            "PGUSER": user,
            "PGPASSWORD": password,
            "PGDATABASE": database,
            "PGSSLMODE": "disable",
            "PGCONNECT_TIMEOUT": "10",
        }

    def run(
        self, tool: str, *args: str, user: str, password: str, database: str, stdin: Any = subprocess.DEVNULL
    ) -> subprocess.CompletedProcess[bytes]:
        done = subprocess.run(
            [str(self.bin / tool), *args],
            env=self.env(user, password, database),
            stdin=stdin,
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{tool} {' '.join(args)}: {done.stderr.decode(errors='replace')}"
        return done

    def sql(self, text: str, *, user: str = SUPERUSER, database: str = "postgres") -> str:
        """Run SQL as psql runs a script (each statement on its own: CREATE DATABASE among them)."""
        password = SUPERUSER_PASSWORD if user == SUPERUSER else ZITADEL_PASSWORD
        with tempfile.TemporaryFile() as script:
            script.write(text.encode())
            script.seek(0)
            return self.run(
                "psql", "-X", "-v", "ON_ERROR_STOP=1", "-qAt", "-f", "-",
                user=user, password=password, database=database, stdin=script,
            ).stdout.decode()  # fmt: skip

    def rows(self) -> dict[str, str]:
        """Every row of Zitadel's tables, as COPY writes them, in key order."""
        copy = "COPY (SELECT * FROM {} ORDER BY 1, 2, 3) TO STDOUT"  # the module's own table names
        return {table: self.sql(copy.format(table), database="zitadel") for table in TABLES}


def _as_postgres(directory: Path) -> list[str]:
    """The prefix that runs the server's commands as a user PostgreSQL accepts: ours, or under root
    the package's ``postgres`` user (setpriv execs, so the server's pid is the one we hold)."""
    if os.geteuid() != 0:
        return []
    try:
        account = pwd.getpwnam("postgres")
    except KeyError:
        pytest.fail("running as root, and there is no postgres user to run PostgreSQL as (make install)")
    shutil.chown(directory, account.pw_uid, account.pw_gid)
    return ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--clear-groups", "--"]


def _start(bin_dir: Path, directory: Path) -> tuple[Postgres, subprocess.Popen[bytes]]:
    prefix = _as_postgres(directory)
    (directory / "pw").write_text(SUPERUSER_PASSWORD + "\n")
    shutil.chown(directory / "pw", directory.stat().st_uid, directory.stat().st_gid)
    initdb = subprocess.run(
        [*prefix, str(bin_dir / "initdb"), "-D", str(directory / "data"), "-U", SUPERUSER,
         f"--pwfile={directory / 'pw'}", "--auth=scram-sha-256", "--encoding=UTF8", "--no-locale"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert initdb.returncode == 0, initdb.stderr
    server = Postgres(bin_dir, HOST, free_port(HOST), directory)
    settings = {
        "listen_addresses": HOST,
        "port": str(server.port),
        "unix_socket_directories": str(directory),
        "fsync": "off",  # a throwaway cluster
    }
    options = [arg for name, value in settings.items() for arg in ("-c", f"{name}={value}")]
    with (directory / "server.log").open("wb") as log:  # the server keeps its own copy of the descriptor
        process = subprocess.Popen(
            [*prefix, str(bin_dir / "postgres"), "-D", str(directory / "data"), *options],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return server, process


def _wait_ready(server: Postgres, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"PostgreSQL stopped: {(server.directory / 'server.log').read_text()[-2000:]}")
        ready = subprocess.run(
            [str(server.bin / "pg_isready"), "-h", server.host, "-p", str(server.port)], capture_output=True
        )
        if ready.returncode == 0:
            return
        time.sleep(0.2)
    pytest.fail("PostgreSQL did not accept connections within 60 s")


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    bin_dir = server_binaries()
    # Not pytest's tmp_path: its parents are root's alone, and the server may run as postgres.
    directory = Path(tempfile.mkdtemp(prefix="flexplane-identity-pg-"))
    process: subprocess.Popen[bytes] | None = None
    try:
        server, process = _start(bin_dir, directory)
        _wait_ready(server, process)
        yield server
    finally:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)  # a fast shutdown
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address=address(BACKUP, 5), port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def cronjob() -> dict[str, Any]:
    """The identity chart's backup CronJob's pod, rendered with a bucket."""
    values = kit.merged(
        MINIMAL, {"backup": {"enabled": True, "keep": 2, "s3": {"url": f"s3://{BUCKET}/{PREFIX}"}}}
    )
    with helm_python.Chart.load(CHART) as chart:
        rendered = kit.manifests(chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True))
    (found,) = [m for m in rendered if m["kind"] == "CronJob"]
    pod: dict[str, Any] = found["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return pod


def flexplane(
    command: list[str], s3_endpoint: str, key_file: Path, settings: str
) -> subprocess.CompletedProcess[str]:
    """One of flex.plane's commands as the image runs it (``python -m django``), with the bucket's
    settings."""
    assert command[:3] == ["python", "-m", "django"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": settings,
        "FLEXPLANE_BACKUP_KEY_FILE": str(key_file),
        "FLEXPLANE_BACKUP_S3_ENDPOINT": s3_endpoint,
        "FLEXPLANE_BACKUP_S3_ACCESS_KEY": "test",
        "FLEXPLANE_BACKUP_S3_SECRET_KEY": "test",
    }
    done = subprocess.run(
        [sys.executable, "-m", "django", *command[3:]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


def restore(postgres: Postgres, dump: Path) -> None:
    """docs/operating.md's restore: pg_restore as the superuser, connected to its own database, the dump on
    its standard input; it drops Zitadel's database if there is one and makes it anew from the dump."""
    with dump.open("rb") as stdin:
        postgres.run(
            "pg_restore", "--clean", "--if-exists", "--create", "--exit-on-error", "--no-password",
            "--dbname=postgres",
            user=SUPERUSER, password=SUPERUSER_PASSWORD, database="postgres", stdin=stdin,
        )  # fmt: skip


def test_a_dump_of_zitadels_database_sealed_in_the_bucket_brings_its_users_back(
    postgres: Postgres, s3_endpoint: str, cronjob: dict[str, Any], tmp_path: Path
) -> None:
    postgres.sql(INIT)
    postgres.sql(SCHEMA_AND_USERS, user=ZITADEL, database="zitadel")
    before = postgres.rows()
    assert "alice@acme.example" in before["projections.users14_humans"]
    s3 = S3Settings(s3_endpoint, access_key="test", secret_key="test").client()
    s3.create_bucket(Bucket=BUCKET)
    management = S3Store(f"s3://{BUCKET}/{PREFIX}", s3).put("5f0c", "2026-12-01T03:17:00Z", b"the platform's")
    key_file = tmp_path / "key"
    key_file.write_text(base64.b64encode(KEY).decode() + "\n")

    # The CronJob, three nights: pg_dump as Zitadel's user, then the sealing into the bucket (keeping 2).
    (dump_step,) = cronjob["initContainers"]
    seal_step = kit.sole_container(cronjob)
    scratch = tmp_path / "dump"
    scratch.mkdir()
    dump_env = {var["name"]: var.get("value") for var in dump_step["env"]}
    assert (dump_env["PGUSER"], dump_env["PGDATABASE"]) == (ZITADEL, "zitadel")
    pg_dump = [arg.replace(DUMP_MOUNT, str(scratch)) for arg in dump_step["command"]]
    seal = [arg.replace(DUMP_MOUNT, str(scratch)) for arg in seal_step["command"] + seal_step["args"]]
    settings = {var["name"]: var.get("value") for var in seal_step["env"]}["DJANGO_SETTINGS_MODULE"]
    for _night in range(3):
        postgres.run(pg_dump[0], *pg_dump[1:], user=ZITADEL, password=ZITADEL_PASSWORD, database="zitadel")
        sealed = flexplane(seal, s3_endpoint, key_file, settings)
    assert "sealed the identity dump" in sealed.stdout
    assert "kept the newest 2 identity dumps; deleted 1" in sealed.stdout
    stored = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"])
    dumps = [key for key in stored if key.startswith(f"{PREFIX}/identity/") and key.endswith(".fpdump")]
    assert sorted([*dumps, management]) == stored  # two dumps, and the platform's backup untouched
    assert len(dumps) == 2
    newest = s3.get_object(Bucket=BUCKET, Key=dumps[-1])["Body"].read()
    assert newest.startswith(b"FLEXPLANE-SEALED-FILE\n")
    assert b"alice@acme.example" not in newest

    # The disaster: Zitadel's database is gone.
    postgres.sql("DROP DATABASE zitadel")
    assert postgres.sql("SELECT count(*) FROM pg_database WHERE datname = 'zitadel'") == "0\n"

    # The restore, as documented: fetch and open the newest dump, then pg_restore.
    restored_dump = tmp_path / "restore" / "zitadel.dump"
    fetch = ["python", "-m", "django", "fetch_dump", "--s3", f"s3://{BUCKET}/{PREFIX}/identity"]
    fetched = flexplane([*fetch, "--to", str(restored_dump)], s3_endpoint, key_file, settings)
    assert f"from s3://{BUCKET}/{PREFIX}/identity/" in fetched.stdout
    restore(postgres, restored_dump)

    assert postgres.rows() == before
    users = postgres.sql("SELECT username FROM projections.users14 ORDER BY username", database="zitadel")
    assert users.split() == ["alice", "flexplane-orchestrator", "zitadel-admin"]
    # Zitadel's user owns its tables again, and writes.
    postgres.sql(
        "INSERT INTO projections.users14 (id, instance_id, resource_owner, username, state, type) "
        "VALUES ('103', 'i1', 'o2', 'bob', 1, 1)",
        user=ZITADEL, database="zitadel",
    )  # fmt: skip

    # Restored over a living database (a user deleted by mistake, one added since): the dump's state.
    postgres.sql("DELETE FROM projections.users14 WHERE username = 'alice'", user=ZITADEL, database="zitadel")
    restore(postgres, restored_dump)
    assert postgres.rows() == before

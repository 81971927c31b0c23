"""The harness's real servers answer: later work (the service) relies on them."""

from __future__ import annotations

import psycopg
import pytest
import redis

pytestmark = pytest.mark.services


def test_postgres_accepts_queries(postgres_server):
    with psycopg.connect(postgres_server.url, connect_timeout=5) as conn:
        version = conn.execute("select current_setting('server_version_num')::int").fetchone()[0]
        conn.execute("create table probe (id serial primary key, v text)")
        conn.execute("insert into probe (v) values ('ackreplay')")
        assert conn.execute("select v from probe").fetchone()[0] == "ackreplay"
    assert version >= 130000


def test_redis_round_trips(redis_server):
    r = redis.Redis.from_url(redis_server.url, socket_timeout=5)
    assert r.ping()
    r.set("ackreplay:probe", b"1")
    assert r.get("ackreplay:probe") == b"1"
    assert r.config_get("bind")["bind"] == "127.0.0.1"

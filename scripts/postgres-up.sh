#!/usr/bin/env bash
# A real PostgreSQL server on 127.0.0.1 for the job store's tests (c.PromoteExtension.db_url): installs
# Debian's postgresql when missing, starts its cluster listening on loopback only, and creates the role
# `promote` (password `promote`, allowed to create databases: each test makes its own) and its database.
# Idempotent: a server that already answers is left alone. Prints the URL the tests use.
#
# Usage: scripts/postgres-up.sh [stop]
set -euo pipefail
PORT=${PROMOTE_PG_PORT:-5432}
cd /  # psql runs as postgres, who may not enter the caller's working directory

if [ "$(id -u)" != 0 ]; then echo "postgres-up: needs root (it starts the cluster as postgres)" >&2; exit 1; fi
if ! command -v pg_lsclusters >/dev/null; then
  echo "postgres-up: installing postgresql"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null
fi
version=$(pg_lsclusters --no-header | awk 'NR==1 {print $1}')
cluster=$(pg_lsclusters --no-header | awk 'NR==1 {print $2}')
if [ -z "$version" ]; then echo "postgres-up: no cluster (pg_createcluster)" >&2; exit 1; fi
if [ "${1:-}" = stop ]; then pg_ctlcluster "$version" "$cluster" stop || true; exit 0; fi

conf=/etc/postgresql/$version/$cluster/postgresql.conf
# loopback only, and the port the tests expect
grep -q "^listen_addresses = '127.0.0.1'" "$conf" || echo "listen_addresses = '127.0.0.1'" >>"$conf"
grep -q "^port = $PORT" "$conf" || echo "port = $PORT" >>"$conf"
if ! pg_lsclusters --no-header | awk 'NR==1 {print $4}' | grep -q online; then
  pg_ctlcluster "$version" "$cluster" start
fi
for _ in $(seq 1 30); do
  runuser -u postgres -- psql -p "$PORT" -qAtc "SELECT 1" >/dev/null 2>&1 && break
  sleep 1
done
runuser -u postgres -- psql -p "$PORT" -qAtc "SELECT 1" >/dev/null
psql_su() { runuser -u postgres -- psql -p "$PORT" -v ON_ERROR_STOP=1 -qAt "$@"; }
if [ "$(psql_su -c "SELECT 1 FROM pg_roles WHERE rolname = 'promote'")" != 1 ]; then
  psql_su -c "CREATE ROLE promote LOGIN CREATEDB PASSWORD 'promote'"
fi
psql_su -c "ALTER ROLE promote CREATEROLE"  # the row-level security test makes a role per user (tests/test_hub.py)
# and a test database is dropped WITH (FORCE) while those roles may still hold connections to it
psql_su -c "GRANT pg_signal_backend TO promote"
if [ "$(psql_su -c "SELECT 1 FROM pg_database WHERE datname = 'promote'")" != 1 ]; then
  psql_su -c "CREATE DATABASE promote OWNER promote"
fi
echo "postgres-up: PostgreSQL $version on 127.0.0.1:$PORT (postgresql+psycopg://promote:promote@127.0.0.1:$PORT/promote)"

#!/usr/bin/env bash
# Installs Debian's PgBouncer for live mode's Postgres scenarios behind a
# pooler (live/postgres.go, TestLiveClassicFailures), which start their own
# pgbouncer on a free port on 127.0.0.1 with a generated configuration.
# Does nothing when pgbouncer is already found. Never fails the caller: when
# it cannot install it says so and exits 0; the live test then skips, except
# under CI=true, where it fails and so reports the missing server.
set -uo pipefail
. "$(dirname "$0")/debian-packages.sh"

if [ -x /usr/sbin/pgbouncer ]; then
  echo "install-pgbouncer: $(/usr/sbin/pgbouncer --version 2>/dev/null | head -1) is already installed."
  exit 0
fi
if ! debian_install install-pgbouncer pgbouncer; then
  echo "install-pgbouncer: PgBouncer not installed; the live Postgres test will be skipped (and fail under CI=true)."
  exit 0
fi
# The package may start a system service; live runs use their own.
if command -v service >/dev/null 2>&1; then service pgbouncer stop >/dev/null 2>&1 || true; fi
echo "install-pgbouncer: installed $(/usr/sbin/pgbouncer --version 2>/dev/null | head -1)."
exit 0

#!/usr/bin/env bash
# Installs Debian's PostgreSQL 15 server for the Postgres differential tests
# (issue 22), which start their own cluster with initdb + pg_ctl in a temp
# directory on a free port on 127.0.0.1. Debian puts those binaries in
# /usr/lib/postgresql/<major>/bin, off PATH, so the tests look there too.
# Does nothing when initdb is already found. Never fails the caller: when it
# cannot install it says so and exits 0; the differential tests then skip,
# except under CI=true, where they fail and so report the missing server.
set -uo pipefail
. "$(dirname "$0")/debian-packages.sh"

find_initdb() {
  command -v initdb 2>/dev/null && return 0
  local f
  for f in /usr/lib/postgresql/*/bin/initdb; do
    [ -x "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}

if initdb=$(find_initdb); then
  echo "install-postgres: $("$initdb" --version 2>/dev/null || echo "$initdb") is already installed."
  exit 0
fi
# Debian 12 ships postgresql-15; elsewhere take the distribution's default
# major version (the lock functions compared have not changed since 9.1).
debian_install install-postgres postgresql-15 || debian_install install-postgres postgresql
# The package creates and starts a system cluster on port 5432 where an init
# system runs; the tests never use it (they run their own cluster on a free
# port, as a non-root user because postgres refuses to run as root).
if initdb=$(find_initdb); then
  echo "install-postgres: installed $("$initdb" --version)."
else
  echo "install-postgres: postgres not installed; the Postgres differential tests will skip (and fail under CI=true)."
fi
exit 0

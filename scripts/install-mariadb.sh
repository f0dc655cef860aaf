#!/usr/bin/env bash
# Installs Debian's MariaDB server (10.11 on Debian 12) for the MySQL
# differential tests of sim/mysqlnode (issue 22), which start their own
# server with mariadb-install-db + mariadbd in a temporary directory on a
# free port on 127.0.0.1. Debian puts mariadbd in /usr/sbin, which the
# tests also search. Does nothing when mariadbd is already found. Never
# fails the caller: when it cannot install it says so and exits 0; the
# differential tests then skip, except under CI=true, where they fail and
# so report the missing server.
set -uo pipefail
. "$(dirname "$0")/debian-packages.sh"

find_mariadbd() {
  command -v mariadbd 2>/dev/null && return 0
  local f
  for f in /usr/sbin/mariadbd /usr/sbin/mysqld; do
    [ -x "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}

if mariadbd=$(find_mariadbd); then
  echo "install-mariadb: $("$mariadbd" --version 2>/dev/null || echo "$mariadbd") is already installed."
  exit 0
fi
# mariadb-server brings mariadbd and mariadb-install-db; the client
# (mariadb-client-core) is not needed: the tests talk through
# go-sql-driver/mysql.
debian_install install-mariadb mariadb-server
# The package creates and starts a system server on port 3306 where an
# init system runs; the tests never use it (they run their own server on a
# free port with a datadir of their own).
if mariadbd=$(find_mariadbd); then
  echo "install-mariadb: installed $("$mariadbd" --version)."
else
  echo "install-mariadb: mariadbd not installed; the MySQL differential tests will skip (and fail under CI=true)."
fi
exit 0

#!/usr/bin/env bash
# Installs Debian's redis-server (Redis 7) for the differential tests
# (sim/differential_*_test.go), which start their own servers on 127.0.0.1.
# Does nothing when redis-server is already on PATH. Runs `apt-get update`
# first and waits for the dpkg lock when another install holds it.
# When it cannot install it says so and exits 0: the differential tests then
# skip, except under CI=true, where they fail and so report the missing server.
set -uo pipefail

if command -v redis-server >/dev/null 2>&1; then
  echo "install-redis: $(redis-server --version 2>/dev/null || echo 'redis-server') is already installed."
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-redis: apt-get not found; cannot install redis-server. The differential tests will skip (and fail under CI=true)."
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    echo "install-redis: not root and no password-less sudo; cannot install redis-server."
    exit 0
  fi
fi

export DEBIAN_FRONTEND=noninteractive
log=/tmp/install-redis.log
: >"$log"

# apt_retry runs one apt-get command, retrying for up to ~5 minutes while
# another process (a parallel install) holds the dpkg or apt lists lock.
apt_retry() {
  local i
  for i in $(seq 1 60); do
    if $SUDO "$@" >>"$log" 2>&1; then
      return 0
    fi
    if grep -qiE 'could not get lock|unable to lock|is another process using it' "$log"; then
      echo "install-redis: apt is locked by another process; waiting (try $i) ..."
      : >"$log"
      sleep 5
      continue
    fi
    return 1
  done
  return 1
}

echo "install-redis: apt-get update ..."
if ! apt_retry apt-get update -q; then
  echo "install-redis: apt-get update failed (see $log); redis-server not installed."
  exit 0
fi
echo "install-redis: apt-get install -y redis-server ..."
# -o DPkg::Lock::Timeout makes apt itself wait for the lock as well.
if ! apt_retry apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 redis-server; then
  echo "install-redis: apt-get install redis-server failed (see $log); redis-server not installed."
  exit 0
fi
# The package starts a system service on port 6379 where an init system
# runs; the tests never use it (they start their own servers on free ports).
if command -v redis-server >/dev/null 2>&1; then
  echo "install-redis: installed $(redis-server --version)."
else
  echo "install-redis: apt-get reported success but redis-server is not on PATH."
fi
exit 0

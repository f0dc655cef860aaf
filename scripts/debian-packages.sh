# Sourced by the install-*.sh scripts: one way to install Debian packages for
# the tests. debian_install NAME PKG... runs `apt-get update` and then
# `apt-get install` for PKG..., as root or through password-less sudo,
# waiting while another installer holds the dpkg or apt lists lock (a shared
# machine, a parallel CI step). It prints what it does prefixed with NAME,
# logs apt's output to /tmp/NAME.log and returns 1 when it cannot install;
# callers then say what will skip and exit 0, so CI goes on and the tests
# that need the package fail under CI=true instead.

debian_install() {
  local name=$1
  shift
  local log=/tmp/$name.log
  : >"$log"
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$name: apt-get not found; cannot install $*."
    return 1
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo="sudo -n"
    else
      echo "$name: not root and no password-less sudo; cannot install $*."
      return 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  echo "$name: apt-get update ..."
  if ! debian_retry "$name" "$log" $sudo apt-get update -q; then
    echo "$name: apt-get update failed (see $log)."
    return 1
  fi
  echo "$name: apt-get install -y $* ..."
  # DPkg::Lock::Timeout makes apt itself wait for the dpkg lock as well.
  if ! debian_retry "$name" "$log" $sudo apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 "$@"; then
    echo "$name: apt-get install $* failed (see $log)."
    return 1
  fi
}

# debian_retry NAME LOG CMD... runs CMD, retrying for up to ten minutes while
# the package database is locked or a previous install was interrupted.
debian_retry() {
  local name=$1 log=$2 i
  shift 2
  for i in $(seq 1 60); do
    if "$@" >>"$log" 2>&1; then
      return 0
    fi
    if ! grep -qiE 'could not get lock|unable to lock|is another process using it|dpkg was interrupted' "$log"; then
      return 1
    fi
    echo "$name: the package database is busy; waiting (try $i of 60) ..."
    : >"$log"
    sleep 10
  done
  return 1
}

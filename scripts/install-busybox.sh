#!/usr/bin/env bash
# Installs Debian's busybox-static for the container image of the locklab
# binary (scripts/build-image.sh): the Kubernetes Indexed Job in
# deploy/explore-indexed-job.yaml runs its sweep command through /bin/sh,
# and the image takes its shell from this statically linked busybox, so the
# image needs no base image. Does nothing when a static busybox is already
# at /bin/busybox. Never fails the caller: when it cannot install it says
# so and exits 0; the image test (cmd/locklab-image) then skips, except
# under CI=true, where it fails and so reports the missing package.
set -uo pipefail
. "$(dirname "$0")/debian-packages.sh"

# Debian's dynamically linked busybox package also installs /bin/busybox;
# it cannot run in an image without a libc, so only a static one will do
# (busybox-static replaces it).
static_busybox() {
  [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1
}
if static_busybox; then
  echo "install-busybox: $(/bin/busybox 2>/dev/null | head -1 || echo busybox) (static) is already installed."
  exit 0
fi
if ! debian_install install-busybox busybox-static; then
  echo "install-busybox: busybox-static not installed; scripts/build-image.sh cannot build the image and its test will skip (and fail under CI=true)."
  exit 0
fi
if static_busybox; then
  echo "install-busybox: installed $(/bin/busybox | head -1)."
else
  echo "install-busybox: apt-get reported success but /bin/busybox is missing or not static."
fi
exit 0

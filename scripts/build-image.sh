#!/usr/bin/env bash
# Builds the container image of the locklab binary that the Kubernetes
# Indexed Job (deploy/explore-indexed-job.yaml) and the GitHub Actions
# workflow (deploy/github-actions-explore.yml) run, as a tarball:
#
#   bash scripts/build-image.sh [OUT]     OUT defaults to locklab.tar
#
# No container daemon and no base image: cmd/locklab-image packs one layer
# holding a static locklab and Debian's static busybox as /bin/sh (install
# it with 'apt-get install busybox-static' or bash scripts/install-busybox.sh).
# The binary is built with CGO_ENABLED=0, -trimpath and an empty build ID,
# and every timestamp in the image is fixed, so the same commit (with the
# same Go toolchain and busybox-static) gives the same digest, which this
# script prints. The image is tagged locklab:local; docs/sweeps.md shows how
# to load it (docker load -i, kind load image-archive) or push it (crane push).
#
# Environment: GOARCH (default: this machine's) picks the image's
# architecture; LOCKLAB_IMAGE_TAG overrides the tag; BUSYBOX the busybox file.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-locklab.tar}
if [ $# -gt 1 ]; then
  echo "scripts/build-image.sh: expected at most one argument, the tarball to write (default locklab.tar)" >&2
  exit 2
fi
busybox=${BUSYBOX:-/bin/busybox}
if [ ! -x "$busybox" ]; then
  echo "scripts/build-image.sh: $busybox not found: install Debian's busybox-static (bash scripts/install-busybox.sh), or set BUSYBOX to a static busybox" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# -buildvcs=false keeps the working tree's state (a modified file, the
# checkout time) out of the binary; -buildid= and -trimpath keep the build
# cache's IDs and this clone's path out of it.
CGO_ENABLED=0 GOOS=linux go build -trimpath -buildvcs=false \
  -ldflags='-s -w -buildid=' -o "$work/locklab" ./cmd/locklab
go build -o "$work/locklab-image" ./cmd/locklab-image
"$work/locklab-image" --locklab "$work/locklab" --shell "$busybox" \
  --tag "${LOCKLAB_IMAGE_TAG:-locklab:local}" --out "$out"

#!/usr/bin/env bash
# Fetches a local copy of ECharts 5 (echarts.min.js) from the npm registry so
# that locklab's HTML reports can inline it and show interactive charts with
# no internet at view time. The file lands in a cache directory outside the
# repository and must never be committed:
#
#   ${LOCKLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/locklab}/echarts.min.js
#
# Reports find it there, or wherever the environment variable LOCKLAB_ECHARTS
# points. Without it, reports still show the server-side SVG timeline.
set -euo pipefail

cache="${LOCKLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/locklab}"
version="${ECHARTS_VERSION:-5}"

if ! command -v npm >/dev/null 2>&1; then
  echo "fetch-echarts: npm not found; install Node.js/npm, or put echarts.min.js at $cache/echarts.min.js yourself." >&2
  exit 1
fi

mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "fetch-echarts: npm pack echarts@$version ..."
tgz="$(cd "$work" && npm pack --silent "echarts@$version" | tail -n 1)"
if [ -z "$tgz" ] || [ ! -f "$work/$tgz" ]; then
  echo "fetch-echarts: npm pack did not produce a tarball" >&2
  exit 1
fi
tar -xzf "$work/$tgz" -C "$work" package/dist/echarts.min.js package/package.json
if [ ! -s "$work/package/dist/echarts.min.js" ]; then
  echo "fetch-echarts: package/dist/echarts.min.js missing from $tgz" >&2
  exit 1
fi
cp "$work/package/dist/echarts.min.js" "$cache/echarts.min.js.tmp"
mv "$cache/echarts.min.js.tmp" "$cache/echarts.min.js"
ver="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$work/package/package.json" | head -n 1)"
echo "fetch-echarts: ECharts ${ver:-?} saved to $cache/echarts.min.js ($(wc -c <"$cache/echarts.min.js") bytes)."
echo "fetch-echarts: reports pick it up from there (or set LOCKLAB_ECHARTS=/path/to/echarts.min.js)."

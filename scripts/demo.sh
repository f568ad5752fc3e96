#!/usr/bin/env sh
# The quick start's main job: mirror this very checkout, offline, with the
# embedded defaults (SQLite file and mirrors under ./data), then show the registry.
set -e
cd "$(dirname "$0")/.."
export FORGESYNC_GIT_PROTOCOLS="${FORGESYNC_GIT_PROTOCOLS:-https,ssh,file}"
forgesync() { node bin/forgesync.js "$@"; }
forgesync status forgesync >/dev/null 2>&1 || forgesync add . --name forgesync
forgesync sync forgesync --wait
forgesync lease list

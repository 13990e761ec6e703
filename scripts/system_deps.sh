#!/usr/bin/env bash
# System packages the test suite needs beyond Python: Debian's chromium (browser tests; no browser
# is ever downloaded), bubblewrap (the grader's sandbox) and PostgreSQL's server (the multi-machine
# gradebook test). `make test` runs this first. As root it installs what is missing with apt-get;
# otherwise it stops and prints the exact command to run. Set COURSE_SKIP_SYSTEM_DEPS=1 to run
# the suite without them (the tests that need them are then skipped and pytest says why).
set -euo pipefail
if [ "${COURSE_SKIP_SYSTEM_DEPS:-0}" = "1" ]; then
  exit 0
fi
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
cmd="apt-get install -y ${missing[*]}"
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "== installing system packages for the tests: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
echo "make test needs system packages that are not installed: ${missing[*]}" >&2
echo "Install them (Debian/Ubuntu):   sudo $cmd" >&2
echo "or run without them (their tests are skipped):   make test COURSE_SKIP_SYSTEM_DEPS=1" >&2
exit 1

#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Builds blkmodel and runs every test: once as released, once under
# AddressSanitizer and UndefinedBehaviorSanitizer.  Needs root for the
# tests on the real /sys (loop devices), as CI has.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh

status=0
total_pass=0
total_fail=0
run_suite() {
        local dir=$1; shift
        [ -d "$dir" ] || meson setup "$dir" "$@"
        ninja -C "$dir"
        meson test -C "$dir" --print-errorlogs --num-processes 2 || status=1
        # meson's own summary is not a line CI reads: count from its JSON log.
        read -r p f < <(python3 - "$dir/meson-logs/testlog.json" <<'PY'
import json, sys
ok = bad = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"):
        ok += 1
    elif r != "SKIP":
        bad += 1
print(ok, bad)
PY
)
        total_pass=$((total_pass + p))
        total_fail=$((total_fail + f))
}

run_suite build
run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false

echo "tests: $total_pass passed, $total_fail failed"
exit $status

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

# The machine's block devices, as the tests must leave them: which exist,
# which are attached to what, and each queue's scheduler and read-ahead.
# Tests on the real /sys use loop devices of their own and put back what
# they change (tests/lib/loopdev.py); this catches any that do not.
block_state() {
        ls /sys/block
        losetup -a 2>/dev/null | sort
        for q in /sys/block/*/queue; do
                for a in scheduler read_ahead_kb; do
                        [ -r "$q/$a" ] && echo "$q/$a: $(cat "$q/$a" 2>/dev/null)"
                done
        done
        return 0
}
state_dir=$(mktemp -d)
trap 'rm -rf "$state_dir"' EXIT
block_state > "$state_dir/before"
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
# -Dbench=true: the benchmark programs are compiled (with -Werror) though no test runs them, so
# that a change to what they share with the daemon cannot break them unseen until the next bench.
run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbench=true

# Where clang's libFuzzer is at hand, each fuzzer also runs coverage-guided for a while, from its
# seed corpus into a scratch one (what it finds stays out of the repository).
if command -v clang >/dev/null && echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
        clang -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
        [ -d build-fuzz ] || CC=clang meson setup build-fuzz -Dfuzzer=true \
                -Db_sanitize=address,undefined -Db_lundef=false
        # Only the fuzzers: nothing runs the rest of the tree built with clang (45 s against 14 s).
        fuzzers=()
        for corpus in tests/fuzz/corpus/*; do
                fuzzers+=("tests/fuzz/fuzz-$(basename "$corpus")")
        done
        ninja -C build-fuzz "${fuzzers[@]}"
        # All at once, each for twice FUZZ_SECONDS: a fixed wall time however many there are, CI's two
        # CPUs shared among them (with four, as much CPU each as one after another).
        seconds=$((2 * ${FUZZ_SECONDS:-10}))
        fuzz_pids=()
        fuzz_names=()
        fuzz_dirs=()
        for corpus in tests/fuzz/corpus/*; do
                name=fuzz-$(basename "$corpus")
                scratch=$(mktemp -d)
                UBSAN_OPTIONS=halt_on_error=1 "build-fuzz/tests/fuzz/$name" \
                        -max_total_time="$seconds" -print_final_stats=0 -artifact_prefix="$scratch/" \
                        "$scratch" "$corpus" > "$scratch.log" 2>&1 &
                fuzz_pids+=($!)
                fuzz_names+=("$name")
                fuzz_dirs+=("$scratch")
        done
        for i in "${!fuzz_pids[@]}"; do
                scratch=${fuzz_dirs[$i]}
                if wait "${fuzz_pids[$i]}"; then
                        total_pass=$((total_pass + 1))
                else
                        echo "FAIL: ${fuzz_names[$i]} found a crash:"; tail -n 40 "$scratch.log"
                        status=1
                        total_fail=$((total_fail + 1))
                fi
                rm -rf "$scratch" "$scratch.log"
        done
else
        echo "clang with libFuzzer not found: the fuzzers ran on their seed corpora only."
fi

# A loop device goes away a moment after its last user: give it a few seconds.
for _ in 1 2 3 4 5 6 7 8 9 10; do
        block_state > "$state_dir/after"
        cmp -s "$state_dir/before" "$state_dir/after" && break
        sleep 1
done
if ! cmp -s "$state_dir/before" "$state_dir/after"; then
        echo "FAIL: the tests left this machine's block devices changed:"
        diff -u "$state_dir/before" "$state_dir/after" || true
        status=1
        total_fail=$((total_fail + 1))
fi

echo "tests: $total_pass passed, $total_fail failed"
exit $status

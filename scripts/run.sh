#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Builds blkmodel and runs the daemon on this machine's /sys, on the session
# bus if there is one, else on a private bus started here; then shows the
# model with blkmodelctl and busctl.  The daemon keeps running until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
[ -d build ] || meson setup build
ninja -C build

cleanup() {
        [ -n "${daemon_pid:-}" ] && kill "$daemon_pid" 2>/dev/null || true
        [ -n "${bus_pid:-}" ] && kill "$bus_pid" 2>/dev/null || true
}
trap cleanup EXIT

if [ -z "${DBUS_SESSION_BUS_ADDRESS:-}" ]; then
        read -r DBUS_SESSION_BUS_ADDRESS bus_pid < <(dbus-daemon --session --fork --print-address=1 --print-pid=1 | paste -sd' ')
        export DBUS_SESSION_BUS_ADDRESS
        echo "Started a private bus: $DBUS_SESSION_BUS_ADDRESS"
fi

./build/daemon/blkmodeld --session --sysfs-root=/sys &
daemon_pid=$!
# The name appears only once the whole model is published.
for _ in $(seq 100); do
        busctl --user status org.blkmodel1 >/dev/null 2>&1 && break
        sleep 0.1
done

if [ -x build/client/blkmodelctl ]; then
        ./build/client/blkmodelctl --session list
        ./build/client/blkmodelctl --session tree
fi
busctl --user tree org.blkmodel1
echo
echo "blkmodeld is running (pid $daemon_pid) on $DBUS_SESSION_BUS_ADDRESS; Ctrl-C stops it."
wait "$daemon_pid"

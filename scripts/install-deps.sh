#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs what building and testing blkmodel needs on Debian 12 (run as root).
set -eu
# libdbus-1-dev only for dbus-1.pc (where the bus reads policies); polkitd for
# the authorization tests, which run a real one; scdoc builds the man pages,
# man-db and groff-base check that they render, bash-completion names the
# directory the completion goes to, udev has the udevadm that blkmodelctl
# info -a is compared with, iproute2's ss shows a socket's buffers.
PACKAGES="build-essential meson ninja-build pkg-config libsystemd-dev libuv1-dev libjson-c-dev liburing-dev libdbus-1-dev
          dbus dbus-daemon dbus-test-runner systemd util-linux fdisk python3 python3-dbus python3-gi kmod
          polkitd passwd scdoc udev man-db groff-base bash-completion iproute2"
missing=""
for p in $PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update
        apt-get install -y --no-install-recommends $missing
fi

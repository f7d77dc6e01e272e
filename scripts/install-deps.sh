#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs what building and testing blkmodel needs on Debian 12 (run as root).
set -eu
PACKAGES="build-essential meson ninja-build pkg-config libsystemd-dev libuv1-dev libjson-c-dev
          dbus dbus-daemon dbus-test-runner systemd util-linux fdisk python3 python3-dbus python3-gi kmod
          scdoc man-db groff-base bash-completion"
missing=""
for p in $PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update
        apt-get install -y --no-install-recommends $missing
fi

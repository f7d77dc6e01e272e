/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Reads that fail as a driver's attribute may now and then: every read() of a file whose path ends
 * in suffix fails with error, until fail_reads(NULL, 0).  Only in a test linked with
 * -Wl,--wrap=read (tests/unit/meson.build), whose read() calls, the daemon's included, come here.
 */
void fail_reads(const char *suffix, int error);

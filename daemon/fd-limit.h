/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * RLIMIT_NOFILE at the start.
 */

/* How many descriptors the process can still open, counted up to max (at most 64; each one opened
 * and closed again: call it while the process has one thread); negative errno when an open fails
 * for another reason than EMFILE. */
int fd_limit_available(unsigned max);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sysfs/objdir.h"
#include "sysfs/read.h"

/*
 * Many attribute files of the real sysfs read at once, through an io_uring of the calling thread:
 * each file opened, read and closed by the kernel in one linked chain, 64 chains per system call.
 *
 * Why: a complete GetManagedObjects reads every attribute of every object, 120,000 files at 1,000
 * loop devices, three system calls each.  Where a system call is dear (a VM whose kernel enters and
 * leaves through the hypervisor), those calls were a third of the reading's CPU; the ring leaves
 * the kernel's own work (kernfs opens, show() calls) and drops the crossings.  Where a system call
 * is cheap, handing each chain to an io-wq thread costs more than the three crossings it saves:
 * sysfs_read_many_pays() tells which machine this is.  Measured on the real kernel,
 * bench/real-kernel: see bench/RESULTS-real.md.
 *
 * Only for kernfs: a fixture's files need the checks of sysfs_read_attr() (FIFOs, permission
 * bits), and a fixture is no reference for the kernel's cost anyway.
 */

/*
 * Reads values[i]->file relative to dirfds[i] into values[i] (value and error as
 * sysfs_read_source_dup() sets them, the value copied by dup), for i < n.  A file the ring cannot
 * read in one go (one kernfs refuses to open for reading, one as long as the buffer) and a link
 * source ("holders/", "subsystem@") are read the one-by-one way: the values are the same either way.
 * -EOPNOTSUPP, with nothing read, when this thread has no ring: io_uring is off
 * (kernel.io_uring_disabled, a seccomp filter such as a container's) or too old (before 5.19).
 */
int sysfs_read_many(const int *dirfds, ObjDirValue *const *values, size_t n, SysfsStrndup dup,
                    void *userdata);

/*
 * Does reading through the ring pay on this machine?  Measured once per process, on the first call:
 * what a system call costs, against IO_URING_PAYS_FROM_NS.  $BLKMODEL_SYSFS_IO_URING set to 1 or 0
 * decides instead (for tests, and for a machine the measure gets wrong).
 */
bool sysfs_read_many_pays(void);

/* A system call's cost from which the ring pays.  Where it lost, a KVM guest, a system call cost 122
 * ns and the ring was 15 % slower; there handing a chain to io-wq cost about 0.8 µs of CPU more than
 * its three crossings.  Where it won, a guest whose every kernel entry went through the hypervisor,
 * it saved 4.7 µs of CPU a file: some 1.5 µs or more a crossing. */
#define IO_URING_PAYS_FROM_NS 500

/* The decision itself, for what the environment says (NULL: unset) and a measured cost. */
bool sysfs_ring_pays(const char *env, uint64_t syscall_ns);

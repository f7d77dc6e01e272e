/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/*
 * The standard sysfs fixture (tests/fixtures/mksysfs.py) in a temporary
 * directory, and the changes the kernel would make to it: a partition
 * appearing, a disk going, an attribute changing.  Paths are relative to
 * the sysfs root ("devices/virtual/block/loop0"), as devpaths are without
 * their leading '/'.  Every function returns 0 or a negative errno.
 */

typedef struct Fixture {
        char *dir;  /* the mkdtemp() directory */
        char *root; /* dir/sys: the sysfs root to open */
} Fixture;

/* Devpaths in the standard tree. */
#define FIXTURE_SDA "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda"
#define FIXTURE_SR0 "/devices/pci0000:00/0000:00:1f.2/ata2/host1/target1:0:0/1:0:0:0/block/sr0"
#define FIXTURE_SR0_LUN "/devices/pci0000:00/0000:00:1f.2/ata2/host1/target1:0:0/1:0:0:0"
#define FIXTURE_AHCI "/devices/pci0000:00/0000:00:1f.2"
#define FIXTURE_CCISS "/devices/pci0000:00/0000:00:03.0/cciss0/c0d0/block/cciss!c0d0"
#define FIXTURE_LOOP0 "/devices/virtual/block/loop0"
#define FIXTURE_NVME0N1 "/devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0/nvme0n1"

/* Where fixtures go: $BLKMODEL_TEST_TMPDIR, else /dev/shm when it is writable with 1 GiB and a
 * million inodes free, else /tmp.  In memory, as sysfs is: a large tree on a disk takes seconds
 * to write and more to remove. */
const char *fixture_tmpdir(void);
int fixture_new(Fixture *ret);
/* The same below another directory than fixture_tmpdir(). */
int fixture_new_in(const char *tmpdir, Fixture *ret);
/* Removes the whole tree.  Safe on a fixture that was never made. */
void fixture_done(Fixture *f);

/* rel may start with '/': devpaths are accepted as they are. */
int fixture_write(const Fixture *f, const char *rel, const char *value);
int fixture_mkdir(const Fixture *f, const char *rel);
/* A relative symlink at rel pointing to target_rel, as the kernel makes them. */
int fixture_link(const Fixture *f, const char *rel, const char *target_rel);
/* rm -rf, links not followed; a missing path is fine. */
int fixture_remove(const Fixture *f, const char *rel);

/* A partition directory below disk_devpath, with its class/block and dev/block links. */
int fixture_add_partition(const Fixture *f, const char *disk_devpath, const char *name, unsigned major,
                          unsigned minor, unsigned partn, uint64_t start, uint64_t size);
/* A disk at devpath (its parent directories are made) with a queue without scheduler, and its links;
 * no `device` link, as for a virtual disk. */
int fixture_add_disk(const Fixture *f, const char *devpath, unsigned major, unsigned minor, uint64_t size);
/* What the kernel takes away with a block device: its directory and its link farm entries. */
int fixture_remove_block_device(const Fixture *f, const char *devpath, unsigned major, unsigned minor);

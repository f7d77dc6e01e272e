/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <pthread.h>
#include <stdio.h>

#include "common/util.h"
#include "fixture.h"
#include "sysfs/prefetch.h"
#include "tests.h"

static void *read_on_a_thread(void *userdata)
{
        prefetch_read(userdata);
        return NULL;
}

/* What d has for relpath: the value, or "<errno>" when it failed. */
static char *read_through(ObjDir *d, const char *relpath)
{
        const char *v;
        char *s = NULL;
        int r = objdir_read(d, relpath, &v);

        if (r >= 0)
                return strdup(v);
        CHECK(asprintf(&s, "<%d>", r) >= 0);
        return s;
}

static void check_read(ObjDir *d, const char *relpath, const char *want)
{
        _cleanup_(freep) char *got = read_through(d, relpath);

        CHECK_STREQ(got, want);
}

static void test_read_ahead(const Fixture *f)
{
        _cleanup_(prefetch_freep) Prefetch *b = NULL;
        Kobject sda = {.devpath = (char *) FIXTURE_SDA}, loop0 = {.devpath = (char *) FIXTURE_LOOP0},
                gone = {.devpath = (char *) "/devices/virtual/block/gone"};
        Sysfs s;
        pthread_t t;

        CHECK(sysfs_open(f->root, &s) == 0);
        CHECK(prefetch_new(&s, &b) == 0);
        CHECK(prefetch_add_object(b, sda.devpath) == 0);
        CHECK(prefetch_add_file(b, "size") == 0);
        CHECK(prefetch_add_file(b, "queue/rotational") == 0);
        CHECK(prefetch_add_file(b, "no-such-file") == 0);
        CHECK(prefetch_add_file_once(b, "size") == 0); /* had it: not twice */
        CHECK(prefetch_add_object(b, loop0.devpath) == 0);
        CHECK(prefetch_add_file(b, "ro") == 0);
        CHECK(prefetch_add_object(b, gone.devpath) == 0);
        CHECK(prefetch_add_file(b, "size") == 0);
        CHECK(prefetch_n_objects(b) == 3);

        /* The batch has its own root: the daemon's may be closed or reopened meanwhile. */
        sysfs_close(&s);
        CHECK(sysfs_open(f->root, &s) == 0);

        CHECK(pthread_create(&t, NULL, read_on_a_thread, b) == 0);
        CHECK(pthread_join(t, NULL) == 0);

        /* Written after the reading: the object's values are those read ahead, its other files
         * are read as they are now, the directory opened again (the worker closed it once read:
         * batches in flight holding one an object left the loop without descriptors). */
        CHECK(fixture_write(f, FIXTURE_SDA "/size", "1234") == 0);
        CHECK(fixture_write(f, FIXTURE_SDA "/ro", "1") == 0);
        {
                _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(&s, &sda);
                prefetch_hand_over(b, 0, &d);
                CHECK(d.fd < 0);
                CHECK(d.n_values == 3);
                check_read(&d, "size", "976773168");
                check_read(&d, "queue/rotational", "0");
                check_read(&d, "no-such-file", "<-2>");
                check_read(&d, "ro", "1");
        }
        {
                _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(&s, &loop0);
                prefetch_hand_over(b, 1, &d);
                check_read(&d, "ro", "0");
        }
        {
                /* A directory that is not there: each file says so, and nothing is open. */
                _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(&s, &gone);
                prefetch_hand_over(b, 2, &d);
                CHECK(d.fd < 0);
                check_read(&d, "size", "<-2>");
        }
        sysfs_close(&s);
}

/* A directory away while the worker read (a device gone, another of its name come since, its remove
 * not applied yet): the values handed over are not its files' errors, as if every file read "" (a
 * Size of 0, announced as a change and sent in a reply), but what d finds there now. */
static void test_directory_back(const Fixture *f)
{
        _cleanup_(prefetch_freep) Prefetch *b = NULL;
        _cleanup_(freep) char *dir = NULL, *aside = NULL;
        Kobject loop0 = {.devpath = (char *) FIXTURE_LOOP0};
        Sysfs s;
        pthread_t t;

        CHECK(asprintf(&dir, "%s%s", f->root, FIXTURE_LOOP0) >= 0);
        CHECK(asprintf(&aside, "%s/loop0-aside", f->dir) >= 0);
        CHECK(sysfs_open(f->root, &s) == 0);
        CHECK(prefetch_new(&s, &b) == 0);
        CHECK(prefetch_add_object(b, loop0.devpath) == 0);
        CHECK(prefetch_add_file(b, "ro") == 0);
        CHECK(prefetch_add_file(b, "size") == 0);

        CHECK(rename(dir, aside) == 0);
        CHECK(pthread_create(&t, NULL, read_on_a_thread, b) == 0);
        CHECK(pthread_join(t, NULL) == 0);
        CHECK(rename(aside, dir) == 0);
        {
                _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(&s, &loop0);
                prefetch_hand_over(b, 0, &d);
                CHECK(d.n_values == 0);
                check_read(&d, "ro", "0");
                check_read(&d, "size", "2097152");
                CHECK(d.fd >= 0);
        }
        sysfs_close(&s);
}

static void test_never_read(const Fixture *f)
{
        _cleanup_(prefetch_freep) Prefetch *b = NULL;
        Kobject loop0 = {.devpath = (char *) FIXTURE_LOOP0};
        Sysfs s;

        /* A work item that was cancelled never read: the ObjDir reads for itself. */
        CHECK(sysfs_open(f->root, &s) == 0);
        CHECK(prefetch_new(&s, &b) == 0);
        CHECK(prefetch_add_object(b, loop0.devpath) == 0);
        CHECK(prefetch_add_file(b, "ro") == 0);
        {
                _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(&s, &loop0);
                prefetch_hand_over(b, 0, &d);
                CHECK(d.fd < 0 && d.n_values == 0);
                check_read(&d, "ro", "0");
        }
        sysfs_close(&s);
}

/* An object of many files (past the linear search's 64): each read once, in any order, and what it
 * read before it has is what it gives back, even after the file changed. */
static void test_many_files(const Fixture *f)
{
        Kobject sda = {.devpath = (char *) FIXTURE_SDA};
        char name[256], value[64];
        Sysfs s;

        for (unsigned i = 0; i < 200; i++) {
                snprintf(name, sizeof(name), FIXTURE_SDA "/many_%03u", i);
                snprintf(value, sizeof(value), "%u", i);
                CHECK(fixture_write(f, name, value) == 0);
        }
        CHECK(sysfs_open(f->root, &s) == 0);
        {
                _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(&s, &sda);
                for (unsigned i = 0; i < 200; i++) {
                        snprintf(name, sizeof(name), "many_%03u", i);
                        snprintf(value, sizeof(value), "%u", i);
                        check_read(&d, name, value);
                }
                CHECK(d.n_values == 200);
                CHECK(fixture_write(f, FIXTURE_SDA "/many_007", "changed") == 0);
                for (unsigned k = 0; k < 200; k++) {
                        unsigned i = (k * 37) % 200; /* out of order */
                        snprintf(name, sizeof(name), "many_%03u", i);
                        snprintf(value, sizeof(value), "%u", i);
                        check_read(&d, name, value);
                }
                check_read(&d, "size", "1234");
                check_read(&d, "size", "1234");
                CHECK(d.n_values == 201);
        }
        sysfs_close(&s);
}

int main(void)
{
        Fixture f = {};

        CHECK(fixture_new(&f) == 0);
        test_read_ahead(&f);
        test_directory_back(&f);
        test_never_read(&f);
        test_many_files(&f);
        fixture_done(&f);
        return tests_summary();
}

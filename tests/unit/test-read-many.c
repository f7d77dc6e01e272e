/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sysfs_read_many() on this machine's own /sys: every file of every block device's directory, its
 * queue, its power group and a bus directory with write-only files, read through the ring, must
 * read as the one-by-one way reads it.  Reads only: nothing is written or attached.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "sysfs/prefetch.h"
#include "sysfs/read-many.h"
#include "tests.h"

#define MAX_FILES 4096

typedef struct Files {
        int dirfds[MAX_FILES];
        ObjDirValue values[MAX_FILES];
        ObjDirValue *ptrs[MAX_FILES];
        size_t n;
        int open_dirs[64];
        size_t n_dirs;
        size_t write_only; /* files without read permission bits among them */
} Files;

static char *heap_dup(const char *s, size_t n, void *userdata)
{
        return strndup(s, n);
}

/* Every regular file of /sys/<dir>, and holders/ and subsystem@ as link sources. */
static void add_dir(Files *f, const char *dir)
{
        char path[PATH_MAX];
        struct dirent *e;
        DIR *d;
        int fd;

        snprintf(path, sizeof(path), "/sys/%s", dir);
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || f->n_dirs == ELEMENTSOF(f->open_dirs))
                return;
        f->open_dirs[f->n_dirs++] = fd;
        d = opendir(path);
        if (!d)
                return;
        while ((e = readdir(d)) && f->n + 3 < MAX_FILES) {
                struct stat st;
                if (e->d_type != DT_REG || fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                f->write_only += !(st.st_mode & 0444);
                f->dirfds[f->n] = fd;
                f->values[f->n++] = (ObjDirValue){.file = strdup(e->d_name), .error = -ENODATA};
        }
        closedir(d);
        f->dirfds[f->n] = fd;
        f->values[f->n++] = (ObjDirValue){.file = strdup("holders/"), .error = -ENODATA};
        f->dirfds[f->n] = fd;
        f->values[f->n++] = (ObjDirValue){.file = strdup("subsystem@"), .error = -ENODATA};
}

static void files_load(Files *f)
{
        struct dirent *e;
        DIR *d = opendir("/sys/block");
        char sub[PATH_MAX];

        *f = (Files){};
        CHECK(d != NULL);
        while (d && (e = readdir(d)) && f->n_dirs + 3 <= 48) {
                if (e->d_name[0] == '.')
                        continue;
                snprintf(sub, sizeof(sub), "block/%s", e->d_name);
                add_dir(f, sub);
                snprintf(sub, sizeof(sub), "block/%s/queue", e->d_name);
                add_dir(f, sub);
                snprintf(sub, sizeof(sub), "block/%s/power", e->d_name);
                add_dir(f, sub);
        }
        if (d)
                closedir(d);
        /* A bus's uevent and drivers_probe are write-only: kernfs refuses to open them for reading. */
        add_dir(f, "bus/platform");
        for (size_t i = 0; i < f->n; i++)
                f->ptrs[i] = &f->values[i];
}

static void files_clear(Files *f)
{
        for (size_t i = 0; i < f->n; i++) {
                free(f->values[i].value);
                f->values[i].value = NULL;
                f->values[i].error = -ENODATA;
        }
}

static void files_free(Files *f)
{
        files_clear(f);
        for (size_t i = 0; i < f->n; i++)
                free(f->values[i].file);
        for (size_t i = 0; i < f->n_dirs; i++)
                close(f->open_dirs[i]);
}

/* The one-by-one way: the value, or "<errno>". */
static char *read_one(const Files *f, size_t i)
{
        _cleanup_(freep) char *v = NULL;
        char *s = NULL;
        int r = sysfs_read_source(f->dirfds[i], f->values[i].file, true, &v);

        if (r >= 0)
                return TAKE_PTR(v);
        CHECK(asprintf(&s, "<%d>", r) >= 0);
        return s;
}

static char *as_read(const ObjDirValue *v)
{
        char *s = NULL;

        if (v->value)
                return strdup(v->value);
        CHECK(asprintf(&s, "<%d>", v->error) >= 0);
        return s;
}

static void *read_many_on_a_thread(void *userdata)
{
        Files *f = userdata;

        return (void *) (intptr_t) sysfs_read_many(f->dirfds, f->ptrs, f->n, heap_dup, NULL);
}

/* On a thread of its own, as the daemon's workers read: its ring is made there and freed when it
 * ends (under ASan, a ring's buffers left behind are a leak). */
static int read_many_threaded(Files *f)
{
        pthread_t t;
        void *r;

        CHECK(pthread_create(&t, NULL, read_many_on_a_thread, f) == 0);
        CHECK(pthread_join(t, &r) == 0);
        return (int) (intptr_t) r;
}

/* Attributes whose value changes without an event (SPEC §4): any two readings may differ. */
static bool volatile_attr(const char *file)
{
        return streq(file, "stat") || streq(file, "inflight");
}

static void test_same_as_one_by_one(void)
{
        Files *f = calloc(1, sizeof(Files));
        size_t compared = 0, changed = 0, errors = 0;

        files_load(f);
        printf("%zu files in %zu directories, %zu write-only\n", f->n, f->n_dirs, f->write_only);
        /* Past one round of chains, and with the refusals the ring leaves to the one-by-one way. */
        CHECK(f->n > 200);
        CHECK(f->write_only > 0);

        for (unsigned round = 0; round < 2; round++) {
                _cleanup_(freep) char **before = calloc(f->n, sizeof(char *));
                files_clear(f);
                for (size_t i = 0; i < f->n; i++)
                        before[i] = read_one(f, i);
                CHECK(read_many_threaded(f) == 0);
                for (size_t i = 0; i < f->n; i++) {
                        _cleanup_(freep) char *got = as_read(&f->values[i]), *after = read_one(f, i);
                        if (volatile_attr(f->values[i].file)) {
                                /* Counters of I/O that other processes do meanwhile: read, or not;
                                 * either, if the device went meanwhile (another test's loop
                                 * device: the one-by-one readings differ too). */
                                bool failed_before = before[i][0] == '<';
                                CHECK((got[0] == '<') == failed_before || (after[0] == '<') != failed_before);
                                changed++;
                        } else if (!streq(before[i], after)) {
                                /* Changed under us (another test's loop device came or went):
                                 * either value will do. */
                                changed++;
                                CHECK(streq(got, before[i]) || streq(got, after));
                        } else {
                                compared++;
                                errors += got[0] == '<';
                                if (!streq(got, before[i]))
                                        fprintf(stderr, "%s: '%s', one by one '%s'\n", f->values[i].file,
                                                got, before[i]);
                                CHECK_STREQ(got, before[i]);
                        }
                        free(before[i]);
                }
        }
        printf("compared %zu (%zu of them errors both ways), volatile or changed meanwhile %zu\n", compared,
               errors, changed);
        /* Loop devices of tests running beside this one may come and go: most files still compare. */
        CHECK(compared >= 200);
        files_free(f);
        free(f);
}

static void *read_sizes_on_a_thread(void *userdata)
{
        Files *f = userdata;
        size_t unread = 0;

        /* Each count up to past two rounds of slots: the last chains of a call finish alone. */
        for (size_t n = 1; n <= 140 && n <= f->n; n++) {
                files_clear(f);
                CHECK(sysfs_read_many(f->dirfds, f->ptrs, n, heap_dup, NULL) == 0);
                for (size_t i = 0; i < f->n; i++)
                        unread += (i < n) == (!f->values[i].value && f->values[i].error == -ENODATA);
        }
        CHECK(unread == 0);
        return NULL;
}

static void test_every_count(void)
{
        Files *f = calloc(1, sizeof(Files));
        pthread_t t;

        files_load(f);
        CHECK(pthread_create(&t, NULL, read_sizes_on_a_thread, f) == 0);
        CHECK(pthread_join(t, NULL) == 0);
        files_free(f);
        free(f);
}

/* A container's seccomp filter: io_uring_setup fails with EPERM. */
static int forbid_io_uring(void)
{
        struct sock_filter filter[] = {
                        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
                        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
                        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {.len = ELEMENTSOF(filter), .filter = filter};

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                return -errno;
        return 0;
}

static void *prefetch_on_a_thread(void *userdata)
{
        prefetch_read(userdata);
        return NULL;
}

/* A block device's directory below /sys, as a devpath ("/devices/…"): one that is no loop device
 * if there is one, as tests beside this one add and remove theirs. */
static char *some_disk_devpath(void)
{
        char path[PATH_MAX], resolved[PATH_MAX];
        struct dirent *e;
        DIR *d = opendir("/sys/block");
        char *s = NULL;

        while (d && (e = readdir(d))) {
                if (e->d_name[0] == '.' || (s && startswith(e->d_name, "loop")))
                        continue;
                snprintf(path, sizeof(path), "/sys/block/%s", e->d_name);
                if (realpath(path, resolved)) {
                        free(s);
                        s = strdup(resolved + strlen("/sys"));
                }
                if (!startswith(e->d_name, "loop"))
                        break;
        }
        if (d)
                closedir(d);
        return s;
}

/* A batch of GetManagedObjects read ahead on kernfs: the same values with a ring and without. */
static void check_prefetch(unsigned *failed)
{
        /* Files in subdirectories too: groups, a kobject's, one that is not there, a path through "..". */
        static const char *const files[] = {"size",
                                            "power/control",
                                            "power/async",
                                            "dev",
                                            "queue/scheduler",
                                            "queue/nr_requests",
                                            "power/runtime_status",
                                            "holders/",
                                            "no-such-dir/x",
                                            "queue/no-such-file",
                                            "queue/iosched/../scheduler",
                                            "no-such-file"};
        _cleanup_(freep) char *devpath = some_disk_devpath();
        _cleanup_(prefetch_freep) Prefetch *b = NULL;
        Kobject k = {.devpath = devpath};
        Sysfs s;
        pthread_t t;

        if (!devpath || sysfs_open("/sys", &s) < 0 || prefetch_new(&s, &b) < 0) {
                (*failed)++;
                return;
        }
        (void) prefetch_add_object(b, devpath);
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                (void) prefetch_add_file(b, files[i]);
        if (pthread_create(&t, NULL, prefetch_on_a_thread, b) != 0 || pthread_join(t, NULL) != 0)
                (*failed)++;
        {
                _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(&s, &k);
                prefetch_hand_over(b, 0, &d);
                for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                        const char *v;
                        _cleanup_(freep) char *want = NULL;
                        int r = objdir_read(&d, files[i], &v),
                            rw = sysfs_read_source(objdir_fd(&d), files[i], true, &want);
                        if (r != rw || (r >= 0 && !streq(v, want))) {
                                fprintf(stderr, "prefetch %s: %d '%s', one by one %d '%s'\n", files[i], r,
                                        r >= 0 ? v : "", rw, want ?: "");
                                (*failed)++;
                        }
                }
        }
        sysfs_close(&s);
}

static void test_prefetch_with_ring(void)
{
        unsigned failed = 0;

        check_prefetch(&failed);
        CHECK(failed == 0);
}

static void test_without_io_uring(void)
{
        pid_t pid = fork();
        int status;

        CHECK(pid >= 0);
        if (pid == 0) {
                Files *f = calloc(1, sizeof(Files));
                unsigned failed = 0;

                tests_failed = 0; /* the child's own checks only */
                if (forbid_io_uring() < 0)
                        _exit(3);
                files_load(f);
                /* No ring: it says so and reads nothing, and a batch read ahead reads file by file. */
                if (read_many_threaded(f) != -EOPNOTSUPP)
                        failed++;
                for (size_t i = 0; i < f->n; i++)
                        if (f->values[i].value || f->values[i].error != -ENODATA)
                                failed++;
                check_prefetch(&failed);
                files_free(f);
                free(f);
                _exit(failed == 0 && tests_failed == 0 ? 0 : 1);
        }
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Whether the ring pays: the environment's word first, else the cost measured. */
static void test_ring_pays(void)
{
        CHECK(sysfs_ring_pays("1", 0));
        CHECK(!sysfs_ring_pays("0", 100000));
        CHECK(!sysfs_ring_pays(NULL, 122));
        CHECK(sysfs_ring_pays(NULL, 1500));
        CHECK(sysfs_ring_pays(NULL, IO_URING_PAYS_FROM_NS));
        CHECK(!sysfs_ring_pays("yes", 122)); /* neither 1 nor 0: the measure decides */
        CHECK(sysfs_ring_pays("", 1500));
}

int main(void)
{
        /* A call that waits for a completion that never comes hangs: fail instead. */
        alarm(20);
        /* A batch read ahead goes through the ring whatever a system call costs here. */
        CHECK(setenv("BLKMODEL_SYSFS_IO_URING", "1", 1) == 0);
        CHECK(sysfs_read_many_pays());
        test_ring_pays();
        test_same_as_one_by_one();
        test_every_count();
        test_prefetch_with_ring();
        test_without_io_uring();
        return tests_summary();
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "common/util.h"
#include "fail-read.h"
#include "sysfs/read.h"
#include "sysfs/sysfs.h"
#include "tests.h"

static char root[] = "/tmp/test-sysfs-XXXXXX";

/* A directory of the real sysfs lists what glibc's readdir() finds, with the same names; returns
 * how many. */
static size_t check_kernfs_listing(const Sysfs *sys, const char *rel)
{
        _cleanup_(closep) int fd = -1;
        SysfsEntry *e = NULL;
        size_t n = 0, found = 0, expected = 0;
        struct dirent *de;
        DIR *d;

        fd = openat(sys->root_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return 0; /* not on this kernel */
        CHECK(sysfs_list(fd, &e, &n) == 0);
        d = opendir(rel);
        CHECK(d != NULL);
        while (d && (de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                expected++;
                for (size_t i = 0; i < n; i++)
                        found += streq(e[i].name, de->d_name);
        }
        if (d)
                closedir(d);
        if (n != expected || found != expected)
                fprintf(stderr, "%s: listed %zu, readdir %zu, matched %zu\n", rel, n, expected, found);
        CHECK(n == expected && found == expected);
        sysfs_entries_free(e, n);
        return n;
}

static volatile sig_atomic_t signals_taken;

static void on_signal(int sig)
{
        signals_taken++;
}

/* kernfs ends a getdents64 early when a signal is pending (filldir64()): a listing that took a short
 * read for the end lost the rest, and a SIGHUP's rescan reported files gone that were not.  A timer
 * signals this thread every 20 us while it lists. */
static void check_listing_under_signals(const Sysfs *sys, const char *rel)
{
        struct sigaction sa = {.sa_handler = on_signal}, old;
        struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR1};
        struct itimerspec often = {.it_interval.tv_nsec = 20000, .it_value.tv_nsec = 20000}, off = {};
        size_t want = check_kernfs_listing(sys, rel), short_lists = 0, lists = 0;
        timer_t timer;

        if (want == 0)
                return;
        ev._sigev_un._tid = gettid();
        CHECK(sigaction(SIGUSR1, &sa, &old) == 0);
        CHECK(timer_create(CLOCK_MONOTONIC, &ev, &timer) == 0);
        signals_taken = 0;
        CHECK(timer_settime(timer, 0, &often, NULL) == 0);
        /* 1,000 listings, and more until 200 signals came (a faster machine lists faster). */
        for (; lists < 1000 || (signals_taken < 200 && lists < 200000); lists++) {
                _cleanup_(closep) int fd = openat(sys->root_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                SysfsEntry *e = NULL;
                size_t n = 0;

                CHECK(fd >= 0 && sysfs_list(fd, &e, &n) == 0);
                short_lists += n != want;
                sysfs_entries_free(e, n);
        }
        CHECK(timer_settime(timer, 0, &off, NULL) == 0);
        CHECK(timer_delete(timer) == 0);
        CHECK(sigaction(SIGUSR1, &old, NULL) == 0);
        if (short_lists)
                fprintf(stderr, "%s: %zu of %zu listings under signals were short\n", rel, short_lists, lists);
        CHECK(short_lists == 0);
        /* Signals did come while it listed: else this proves nothing. */
        CHECK(signals_taken >= 200);
}

static void write_file(const char *rel, const void *data, size_t len)
{
        _cleanup_(freep) char *p = path_join(root, rel);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        CHECK(fd >= 0);
        CHECK(write(fd, data, len) == (ssize_t) len);
        close(fd);
}

static void check_escape(const char *in, size_t len, const char *expected)
{
        _cleanup_(freep) char *v = sysfs_value_escape(in, len);
        CHECK_STREQ(v, expected);
}

/* sysfs_read_source_dup()'s copier: into one arena, counting its calls. */
typedef struct Arena {
        char buf[256];
        size_t used, calls;
} Arena;

static char *arena_dup(const char *s, size_t n, void *userdata)
{
        Arena *a = userdata;
        char *p = a->buf + a->used;

        a->calls++;
        if (a->used + n + 1 > sizeof(a->buf))
                return NULL;
        memcpy(p, s, n);
        p[n] = 0;
        a->used += n + 1;
        return p;
}

static void check_resolve(const char *base, const char *target, const char *expected)
{
        _cleanup_(freep) char *r = NULL;
        int k = sysfs_resolve_relative(base, target, &r);
        if (expected) {
                CHECK(k == 0);
                CHECK_STREQ(r, expected);
        } else
                CHECK(k < 0);
}

/*
 * A link of sysfs's form ("../devices/x") followed while another process renames files: the kernel
 * answers openat2(RESOLVE_BENEATH) with EAGAIN when a rename anywhere raced a "..", which is no
 * reason for the open to fail (Resolve("sda/device") answered NoSuchObject beside another test).
 */
static void check_links_under_renames(const Sysfs *s)
{
        _cleanup_(freep) char *dev = path_join(root, "devices"), *x = path_join(root, "devices/x"),
                              *cls = path_join(root, "class"), *lnk = path_join(root, "class/x"),
                              *a = path_join(root, "ra"), *b = path_join(root, "rb");
        unsigned failed = 0, eagain = 0;
        pid_t pid;
        int fd;

        CHECK(mkdir(dev, 0755) == 0 && mkdir(x, 0755) == 0 && mkdir(cls, 0755) == 0);
        CHECK(symlink("../devices/x", lnk) == 0);
        write_file("ra", "", 0);
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
                /* Never outliving the test, even one killed by a timeout. */
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                (void) alarm(60);
                for (;;) {
                        (void) rename(a, b);
                        (void) rename(b, a);
                }
        }
        for (unsigned i = 0; i < 20000; i++) {
                fd = sysfs_openat_beneath(s->root_fd, "class/x", O_PATH | O_DIRECTORY, false);
                if (fd < 0) {
                        failed++;
                        eagain += fd == -EAGAIN;
                } else
                        (void) close(fd);
        }
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
        if (failed)
                fprintf(stderr, "class/x: %u of 20000 opens failed (%u with EAGAIN)\n", failed, eagain);
        CHECK(failed == 0);
}

int main(void)
{
        Sysfs s;
        char *v = NULL;
        SysfsEntry *e = NULL;
        size_t n = 0;
        int fd;

        /* Values: one trailing newline goes, bytes that D-Bus can't carry are escaped. */
        check_escape("mq-deadline\n", 12, "mq-deadline");
        check_escape("a\n\n", 3, "a\n");
        check_escape("", 0, "");
        check_escape("a\0b", 3, "a\\x00b");
        check_escape("\xff\xfe", 2, "\\xff\\xfe");
        check_escape("\xc3\xa9", 2, "\xc3\xa9");
        check_escape("\xc0\xaf", 2, "\\xc0\\xaf");          /* overlong '/' */
        check_escape("\xed\xa0\x80", 3, "\\xed\\xa0\\x80"); /* a surrogate */
        check_escape("\xe2\x82", 2, "\\xe2\\x82");          /* truncated */
        /* Noncharacters, which sd-bus refuses to send: U+FFFE, U+FDD0, U+1FFFF. */
        check_escape("a\xef\xbf\xbe", 4, "a\\xef\\xbf\\xbe");
        check_escape("\xef\xb7\x90", 3, "\\xef\\xb7\\x90");
        check_escape("\xf0\x9f\xbf\xbf", 4, "\\xf0\\x9f\\xbf\\xbf");
        check_escape("\xef\xbf\xbd", 3, "\xef\xbf\xbd"); /* U+FFFD is a character */

        /* Link targets resolve lexically and never climb out of the root. */
        check_resolve("/class/block", "../../devices/virtual/block/loop0", "/devices/virtual/block/loop0");
        check_resolve("/devices/pci0000:00/0000:00:02.0/virtio1/block/vda", "../../../virtio1",
                      "/devices/pci0000:00/0000:00:02.0/virtio1");
        check_resolve("/dev/block", "../../devices/x/block/sda/sda1", "/devices/x/block/sda/sda1");
        check_resolve("/class/block", "../../../etc", NULL);
        check_resolve("/class/block", "/etc/passwd", NULL);
        check_resolve("/a", "./b//c/", "/a/b/c");

        CHECK(mkdtemp(root) != NULL);
        CHECK(sysfs_open(root, &s) == 0);
        CHECK(!s.kernfs);
        {
                _cleanup_(freep) char *d = path_join(root, "dev");
                CHECK(mkdir(d, 0755) == 0);
                _cleanup_(freep) char *fifo = path_join(root, "dev/fifo");
                CHECK(mkfifo(fifo, 0644) == 0);
                _cleanup_(freep) char *lnk = path_join(root, "dev/escape");
                CHECK(symlink("/etc/passwd", lnk) == 0);
        }
        write_file("dev/size", "2048\n", 5);
        write_file("dev/uevent", "MAJOR=8\nMINOR=0\n", 16);
        char big[10000];
        memset(big, 'x', sizeof(big));
        write_file("dev/big", big, sizeof(big));

        fd = sysfs_open_dir(&s, "/dev");
        CHECK(fd >= 0);
        CHECK(sysfs_read_attr(fd, "size", false, &v) == 0);
        CHECK_STREQ(v, "2048");
        free(v);

        /* A FIFO never blocks us. */
        v = NULL;
        CHECK(sysfs_read_attr(fd, "fifo", false, &v) == 0);
        CHECK_STREQ(v, "");
        free(v);
        /* Only a FIFO's EAGAIN reads as "": a driver's show() answering it failed to read (it read
         * as "" with success, and a change told the value as "" without a word). */
        v = NULL;
        fail_reads("/dev/size", EAGAIN);
        CHECK(sysfs_read_attr(fd, "size", false, &v) == -EAGAIN);
        fail_reads(NULL, 0);
        CHECK(v == NULL);

        /* Values are bounded by a page, as sysfs's own are. */
        v = NULL;
        CHECK(sysfs_read_attr(fd, "big", false, &v) == 0);
        CHECK(v && strlen(v) == SYSFS_VALUE_MAX);
        free(v);

        /* A file without read permission bits reads as "", even for root, who can open it. */
        write_file("dev/wo", "secret\n", 7);
        {
                _cleanup_(freep) char *wo = path_join(root, "dev/wo");
                CHECK(chmod(wo, 0200) == 0);
        }
        v = NULL;
        CHECK(sysfs_read_attr(fd, "wo", false, &v) == 0);
        CHECK_STREQ(v, "");
        free(v);

        /* What is not UTF-8 (a NUL, a lone continuation byte) is escaped; the newline goes. */
        write_file("dev/odd", "a\0b\x80" "c\n", 6);
        v = NULL;
        CHECK(sysfs_read_attr(fd, "odd", false, &v) == 0);
        CHECK_STREQ(v, "a\\x00b\\x80c");
        free(v);

        /* A link pointing outside the root is refused. */
        v = NULL;
        CHECK(sysfs_read_attr(fd, "escape", false, &v) < 0);
        CHECK(v == NULL);
        CHECK(sysfs_open_dir(&s, "../") < 0);
        /* One entry of the directory, opened the short way: never a link, never its parent. */
        CHECK(sysfs_openat_beneath(fd, "escape", O_RDONLY, true) == -ELOOP);
        CHECK(sysfs_openat_beneath(fd, "escape", O_WRONLY, true) == -ELOOP);
        CHECK(sysfs_openat_beneath(fd, "..", O_RDONLY | O_DIRECTORY, true) < 0);
        CHECK(sysfs_openat_beneath(fd, "", O_RDONLY, true) < 0);
        {
                int one = sysfs_openat_beneath(fd, "size", O_RDONLY, true);
                CHECK(one >= 0 && (fcntl(one, F_GETFD) & FD_CLOEXEC));
                (void) close(one);
        }

        CHECK(sysfs_list(fd, &e, &n) == 0);
        CHECK(n == 7);
        if (n == 7) {
                CHECK_STREQ(e[0].name, "big");
                CHECK(e[0].type == SYSFS_ENTRY_FILE);
                CHECK_STREQ(e[1].name, "escape");
                CHECK(e[1].type == SYSFS_ENTRY_LINK);
                CHECK_STREQ(e[2].name, "fifo");
                CHECK(e[2].type == SYSFS_ENTRY_OTHER);
        }
        sysfs_entries_free(e, n);
        CHECK(sysfs_has_file(fd, "uevent"));
        CHECK(!sysfs_has_file(fd, "fifo"));

        /* What typed properties derive from, read as values are: an attribute; a link directory's
         * names, sorted, '/' between them; a link's basename; "" for what is not there. */
        {
                _cleanup_(freep) char *h = path_join(root, "dev/holders"),
                                      *dm1 = path_join(root, "dev/holders/dm-1"),
                                      *dm0 = path_join(root, "dev/holders/dm-0"),
                                      *sub = path_join(root, "dev/subsystem");
                CHECK(mkdir(h, 0755) == 0);
                CHECK(symlink("../../dm-1", dm1) == 0 && symlink("../../dm-0", dm0) == 0);
                CHECK(symlink("../../../class/block", sub) == 0);
        }
        const struct {
                const char *source, *value;
        } sources[] = {
                        {"size", "2048"}, {"holders/", "dm-0/dm-1"},
                        {"slaves/", ""},  {"subsystem@", "block"},
                        {"driver@", ""},
        };
        for (size_t i = 0; i < ELEMENTSOF(sources); i++) {
                v = NULL;
                CHECK(sysfs_read_source(fd, sources[i].source, false, &v) == 0);
                CHECK_STREQ(v, sources[i].value);
                free(v);
        }

        /* The same values copied by the caller's copier, each once, none left to free; also an
         * escaped one and a write-only one.  What fails to read copies nothing. */
        {
                Arena a = {};
                for (size_t i = 0; i < ELEMENTSOF(sources); i++) {
                        v = NULL;
                        CHECK(sysfs_read_source_dup(fd, sources[i].source, false, arena_dup, &a, &v) == 0);
                        CHECK(v >= a.buf && v < a.buf + sizeof(a.buf));
                        CHECK_STREQ(v, sources[i].value);
                }
                CHECK(sysfs_read_source_dup(fd, "odd", false, arena_dup, &a, &v) == 0);
                CHECK_STREQ(v, "a\\x00b\\x80c");
                CHECK(sysfs_read_source_dup(fd, "wo", false, arena_dup, &a, &v) == 0);
                CHECK_STREQ(v, "");
                CHECK(a.calls == ELEMENTSOF(sources) + 2);
                v = NULL;
                CHECK(sysfs_read_source_dup(fd, "no-such-file", false, arena_dup, &a, &v) == -ENOENT);
                CHECK(v == NULL && a.calls == ELEMENTSOF(sources) + 2);
                /* A copier out of memory is ENOMEM, not a value. */
                a.used = sizeof(a.buf);
                CHECK(sysfs_read_source_dup(fd, "size", false, arena_dup, &a, &v) == -ENOMEM);
                CHECK(sysfs_read_source_dup(fd, "holders/", false, arena_dup, &a, &v) == -ENOMEM);
        }
        close(fd);
        check_links_under_renames(&s);
        sysfs_close(&s);

        /* The real sysfs is told apart: it refuses to open a file without read bits, even to root,
         * so no fstat is needed there, and a write-only attribute still reads as "". */
        Sysfs sys;
        CHECK(sysfs_open("/sys", &sys) == 0);
        CHECK(sys.kernfs);
        if (sysfs_file_mode(sys.root_fd, "bus/pci/rescan") >= 0) {
                CHECK(!(sysfs_file_mode(sys.root_fd, "bus/pci/rescan") & 0444));
                v = NULL;
                CHECK(sysfs_read_attr(sys.root_fd, "bus/pci/rescan", true, &v) == 0);
                CHECK_STREQ(v, "");
                free(v);
        }
        /* A directory that fits in one call, and ones of several buffers (slab: ~400 entries). */
        CHECK(chdir("/sys") == 0);
        check_kernfs_listing(&sys, "class/block");
        check_kernfs_listing(&sys, "kernel/mm");
        check_kernfs_listing(&sys, "module");
        check_kernfs_listing(&sys, "kernel/slab");
        check_kernfs_listing(&sys, "devices/system/cpu");
        check_listing_under_signals(&sys, "kernel/mm");
        check_listing_under_signals(&sys, "kernel");
        sysfs_close(&sys);

        _cleanup_(freep) char *cmd = NULL;
        CHECK(asprintf(&cmd, "rm -rf '%s'", root) > 0);
        CHECK(system(cmd) == 0);
        return tests_summary();
}

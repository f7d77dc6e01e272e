/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A stand-in for libFuzzer's driver, for builds without -fsanitize=fuzzer: runs
 * LLVMFuzzerTestOneInput() once over each file named on the command line and over each file in the
 * directories named there, so that `meson test --suite fuzz` replays the seed corpora (and any
 * reproducer) with whatever sanitizers the build has.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "fuzz.h"

static unsigned n_inputs;

/* Each input in a buffer of exactly its size, so that ASan sees a read past its end. */
static int run_file(const char *path)
{
        _cleanup_(closep) int fd = -1;
        _cleanup_(freep) uint8_t *buf = NULL;
        struct stat st;
        size_t len = 0;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
                fprintf(stderr, "%s: %m\n", path);
                return -errno;
        }
        buf = malloc(st.st_size > 0 ? (size_t) st.st_size : 1);
        if (!buf)
                return -ENOMEM;
        while (len < (size_t) st.st_size) {
                ssize_t k = read(fd, buf + len, (size_t) st.st_size - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        fprintf(stderr, "%s: short read\n", path);
                        return -EIO;
                }
                len += (size_t) k;
        }
        (void) LLVMFuzzerTestOneInput(buf, len);
        n_inputs++;
        return 0;
}

static int name_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* In name order, so that a failure is reproducible from the log alone. */
static int run_dir(const char *path)
{
        _cleanup_(strv_freep) char **names = NULL;
        struct dirent *de;
        size_t n = 0;
        DIR *d;
        int r = 0;

        d = opendir(path);
        if (!d) {
                fprintf(stderr, "%s: %m\n", path);
                return -errno;
        }
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && (r = strv_extend(&names, &n, de->d_name)) < 0)
                        break;
        closedir(d);
        if (r < 0)
                return r;
        if (n > 1)
                qsort(names, n, sizeof(char *), name_cmp);
        for (size_t i = 0; i < n; i++) {
                _cleanup_(freep) char *p = path_join(path, names[i]);
                if (!p)
                        return -ENOMEM;
                r = run_file(p);
                if (r < 0)
                        return r;
        }
        return 0;
}

int main(int argc, char **argv)
{
        if (argc < 2) {
                fprintf(stderr, "Usage: %s FILE|DIR...\n", program_invocation_short_name);
                return 2;
        }
        for (int i = 1; i < argc; i++) {
                struct stat st;
                int r;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %m\n", argv[i]);
                        return 1;
                }
                r = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
                if (r < 0)
                        return 1;
        }
        printf("%u inputs ran.\n", n_inputs);
        /* An empty corpus is a mistake in the build, not a pass. */
        return n_inputs > 0 ? 0 : 1;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "differential.h"
#include "fixture.h"

/*
 * Thousands of sequences cannot each build a fixture (mksysfs.py takes a second or two) nor copy
 * one (1,400 entries).  A sequence notes what it changes (tree_touch), and only that is put back
 * from the pristine tree.  tree_verify() compares everything, so a change the test forgot to note
 * fails the run instead of leaking into the next sequence.
 */

static Fixture fixture_of(const Tree *t)
{
        return (Fixture){.root = t->root};
}

char *tree_path(const Tree *t, const char *rel)
{
        while (*rel == '/')
                rel++;
        return path_join(t->root, rel);
}

static int copy_file(const char *src, const char *dst, mode_t mode)
{
        _cleanup_(closep) int in = -1, out = -1;
        char buf[8192];
        ssize_t n;

        out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (out < 0)
                return -errno;
        in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        /* A file without read bits (kernfs's write-only attributes) has nothing to copy. */
        if (in < 0 && !(errno == EACCES && !(mode & 0444)))
                return -errno;
        while (in >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
                if (write(out, buf, (size_t) n) != n)
                        return -EIO;
        return fchmod(out, mode) < 0 ? -errno : 0;
}

/* cp -a of one entry, links as links, exact modes. */
static int copy_entry(const char *src, const char *dst)
{
        struct stat st;
        int r = 0;

        if (lstat(src, &st) < 0)
                return -errno;
        if (S_ISLNK(st.st_mode)) {
                char target[PATH_MAX];
                ssize_t n = readlink(src, target, sizeof(target) - 1);
                if (n < 0)
                        return -errno;
                target[n] = 0;
                return symlink(target, dst) < 0 ? -errno : 0;
        }
        if (S_ISREG(st.st_mode))
                return copy_file(src, dst, st.st_mode & 07777);
        if (!S_ISDIR(st.st_mode))
                return 0; /* the fixture makes nothing else */

        DIR *d = opendir(src);
        struct dirent *de;
        if (!d)
                return -errno;
        if (mkdir(dst, 0700) < 0) {
                closedir(d);
                return -errno;
        }
        while (r >= 0 && (de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_(freep) char *s = path_join(src, de->d_name), *t = path_join(dst, de->d_name);
                r = s && t ? copy_entry(s, t) : -ENOMEM;
        }
        closedir(d);
        if (r >= 0 && chmod(dst, st.st_mode & 07777) < 0)
                r = -errno;
        return r;
}

/*
 * Every request queue of the standard fixture has 45 attribute files, every PCI function 25: a third of
 * the tree, read again and again, and much alike.  Unless the whole fixture is asked for, each keeps
 * a few of every kind (read-only, writable, write-only, binary) and those the model reads.
 */
static const char *const queue_keep[] = {
                "scheduler",
                "nr_requests",
                "read_ahead_kb",
                "rotational",
                "logical_block_size",
                "max_sectors_kb",
                "write_cache",
                "discard_max_bytes",
                "io_poll",
                "physical_block_size",
                "wbt_lat_usec",
                "dma_alignment",
                NULL,
};
static const char *const pci_keep[] = {
                "vendor", "device", "class",           "enable", "remove",
                "rescan", "config", "driver_override", "irq",    NULL,
};

static bool listed(const char *const *l, const char *s)
{
        for (; *l; l++)
                if (streq(*l, s))
                        return true;
        return false;
}

static int trim(const char *dir)
{
        _cleanup_(freep) char *config = path_join(dir, "config");
        const char *base = strrchr(dir, '/');
        const char *const *keep = NULL;
        struct stat st;
        struct dirent *de;
        DIR *d;
        int r = 0;

        if (!config)
                return -ENOMEM;
        if (base && streq(base, "/queue"))
                keep = queue_keep;
        else if (lstat(config, &st) >= 0 && S_ISREG(st.st_mode))
                keep = pci_keep;
        d = opendir(dir);
        if (!d)
                return -errno;
        while (r >= 0 && (de = readdir(d))) {
                _cleanup_(freep) char *p = NULL;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                p = path_join(dir, de->d_name);
                if (!p || lstat(p, &st) < 0)
                        r = p ? -errno : -ENOMEM;
                else if (S_ISDIR(st.st_mode))
                        r = trim(p);
                else if (keep && S_ISREG(st.st_mode) && !listed(keep, de->d_name) && unlink(p) < 0)
                        r = -errno;
        }
        closedir(d);
        return r;
}

int tree_new(const char *tmpdir, bool whole, Tree *ret)
{
        _cleanup_(freep) char *work = NULL;
        Tree t = {};
        int r;

        r = fixture_new_in(tmpdir, &t.fixture);
        if (r < 0)
                return r;
        work = path_join(tmpdir, "blkmodel-differential-XXXXXX");
        if (!work || !mkdtemp(work)) {
                r = work ? -errno : -ENOMEM;
                fixture_done(&t.fixture);
                return r;
        }
        t.work = TAKE_PTR(work);
        t.pristine = t.fixture.root;
        t.root = path_join(t.work, "sys");
        _cleanup_(freep) char *devices = path_join(t.pristine, "devices");
        r = t.root && devices ? 0 : -ENOMEM;
        if (r >= 0 && !whole)
                r = trim(devices);
        if (r >= 0)
                r = copy_entry(t.pristine, t.root);
        if (r < 0) {
                tree_done(&t);
                return r;
        }
        *ret = t;
        return 0;
}

void tree_done(Tree *t)
{
        if (t->work) {
                Fixture f = {.dir = t->work};
                fixture_done(&f); /* rm -rf, and frees work */
        }
        free(t->root);
        strv_free(t->regions);
        fixture_done(&t->fixture);
        *t = (Tree){};
}

void tree_touch(Tree *t, const char *rel)
{
        while (*rel == '/')
                rel++;
        for (size_t i = 0; i < t->n_regions; i++)
                if (streq(t->regions[i], rel))
                        return;
        if (strv_extend(&t->regions, &t->n_regions, rel) < 0)
                abort();
}

static int region_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Is rel below (or equal to) another region, which puts it back whole? */
static bool covered(char *const *regions, size_t n, const char *rel)
{
        for (size_t i = 0; i < n; i++) {
                const char *rest = startswith(rel, regions[i]);
                if (rest && *rest == '/')
                        return true;
        }
        return false;
}

int tree_restore(Tree *t)
{
        Fixture f = fixture_of(t);
        int r = 0;

        if (t->n_regions > 1)
                qsort(t->regions, t->n_regions, sizeof(char *), region_cmp);
        for (size_t i = 0; r >= 0 && i < t->n_regions; i++) {
                _cleanup_(freep) char *src = path_join(t->pristine, t->regions[i]), *dst = NULL;
                struct stat st;

                if (covered(t->regions, t->n_regions, t->regions[i]))
                        continue;
                dst = tree_path(t, t->regions[i]);
                if (!src || !dst)
                        return -ENOMEM;
                r = fixture_remove(&f, t->regions[i]);
                if (r >= 0 && lstat(src, &st) >= 0)
                        r = copy_entry(src, dst);
        }
        t->regions = strv_free(t->regions);
        t->n_regions = 0;
        return r;
}

/* One line per entry below dir: path, type, mode, and the content or the link's target. */
static int describe(const char *top, const char *rel, char ***l, size_t *n)
{
        _cleanup_(freep) char *path = path_join(top, rel), *line = NULL, *content = NULL;
        struct stat st;
        int r;

        if (!path)
                return -ENOMEM;
        if (lstat(path, &st) < 0)
                return -errno;
        if (S_ISLNK(st.st_mode)) {
                char target[PATH_MAX];
                ssize_t k = readlink(path, target, sizeof(target) - 1);
                target[k < 0 ? 0 : k] = 0;
                content = strdup(target);
        } else if (S_ISREG(st.st_mode)) {
                char buf[4096 + 1] = {};
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                ssize_t k = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : 0;
                if (fd >= 0)
                        close(fd);
                /* Binary files (PCI config) differ somewhere visible: in their length at least. */
                if (asprintf(&content, "%zd:%s", k, buf) < 0)
                        content = NULL;
        } else
                content = strdup("");
        if (!content || asprintf(&line, "%s %o %s", rel, (unsigned) st.st_mode, content) < 0)
                return -ENOMEM;
        r = strv_consume(l, n, TAKE_PTR(line));
        if (r < 0 || !S_ISDIR(st.st_mode))
                return r;

        DIR *d = opendir(path);
        struct dirent *de;
        char **names = NULL;
        size_t n_names = 0;
        if (!d)
                return -errno;
        while (r >= 0 && (de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        r = strv_extend(&names, &n_names, de->d_name);
        closedir(d);
        if (n_names > 1)
                qsort(names, n_names, sizeof(char *), region_cmp);
        for (size_t i = 0; r >= 0 && i < n_names; i++) {
                _cleanup_(freep) char *sub = path_join(rel, names[i]);
                r = sub ? describe(top, sub, l, n) : -ENOMEM;
        }
        strv_free(names);
        return r;
}

int tree_verify(const Tree *t)
{
        _cleanup_(strv_freep) char **a = NULL, **b = NULL;
        size_t na = 0, nb = 0;
        int r;

        r = describe(t->pristine, "", &a, &na);
        if (r >= 0)
                r = describe(t->root, "", &b, &nb);
        if (r < 0)
                return r;
        for (size_t i = 0; i < na || i < nb; i++)
                if (i >= na || i >= nb || !streq(a[i], b[i])) {
                        fprintf(stderr, "The tree was not put back: pristine '%s', now '%s'.\n",
                                i < na ? a[i] : "(end)", i < nb ? b[i] : "(end)");
                        return -EUCLEAN;
                }
        return 0;
}

int tree_write(Tree *t, const char *rel, const char *value, size_t len)
{
        _cleanup_(freep) char *p = tree_path(t, rel);
        _cleanup_(closep) int fd = -1;
        struct stat st;

        if (!p)
                return -ENOMEM;
        tree_touch(t, rel);
        /* As kernfs: a new file gets the mode of a read-only attribute; an old one keeps its own
         * (made writable for the moment, should the test not run as root). */
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (fd < 0 && errno == EACCES && lstat(p, &st) >= 0 && chmod(p, st.st_mode | 0200) >= 0) {
                fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
                (void) chmod(p, st.st_mode & 07777);
        }
        if (fd < 0)
                return -errno;
        return write(fd, value, len) == (ssize_t) len ? 0 : -EIO;
}

char *tree_read(const Tree *t, const char *rel)
{
        _cleanup_(freep) char *p = tree_path(t, rel);
        char buf[4096];
        ssize_t n;
        int fd;

        fd = p ? open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
        if (fd < 0)
                return NULL;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n < 0)
                return NULL;
        buf[n] = 0;
        if (n > 0 && buf[n - 1] == '\n')
                buf[n - 1] = 0;
        return strdup(buf);
}

bool tree_exists(const Tree *t, const char *rel)
{
        _cleanup_(freep) char *p = tree_path(t, rel);
        struct stat st;

        return p && lstat(p, &st) >= 0;
}

bool tree_is_dir(const Tree *t, const char *rel)
{
        _cleanup_(freep) char *p = tree_path(t, rel);
        struct stat st;

        return p && lstat(p, &st) >= 0 && S_ISDIR(st.st_mode);
}

char **tree_list(const Tree *t, const char *rel, char kind)
{
        _cleanup_(freep) char *p = tree_path(t, rel);
        char **names = NULL;
        size_t n = 0;
        struct dirent *de;
        DIR *d;

        names = calloc(1, sizeof(char *)); /* an empty list, not NULL */
        if (!names)
                abort();
        d = p ? opendir(p) : NULL;
        while (d && (de = readdir(d))) {
                struct stat st;
                if (streq(de->d_name, ".") || streq(de->d_name, "..") ||
                    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                char k = S_ISREG(st.st_mode)   ? 'f'
                         : S_ISDIR(st.st_mode) ? 'd'
                         : S_ISLNK(st.st_mode) ? 'l'
                                               : '?';
                if ((kind == 0 || kind == k) && strv_extend(&names, &n, de->d_name) < 0)
                        abort();
        }
        if (d)
                closedir(d);
        if (n > 1)
                qsort(names, n, sizeof(char *), region_cmp);
        return names;
}

/* A link's target seen from the directory that holds it ("class/block" + "../../devices/x" →
 * "/devices/x"); NULL if it leaves the root. */
static char *resolve(const char *base, const char *target)
{
        char *out = malloc(strlen(base) + strlen(target) + 3), *q = out;
        const char *c = target;

        if (!out)
                return NULL;
        *q = 0;
        if (*base)
                q = stpcpy(stpcpy(q, "/"), base);
        while (*c) {
                size_t len = strcspn(c, "/");
                if (len == 2 && strncmp(c, "..", 2) == 0) {
                        char *slash = strrchr(out, '/');
                        if (!slash)
                                return mfree(out);
                        *slash = 0;
                        q = slash;
                } else if (len > 0 && !(len == 1 && c[0] == '.')) {
                        *q++ = '/';
                        memcpy(q, c, len);
                        q += len;
                        *q = 0;
                }
                c += len;
                while (*c == '/')
                        c++;
        }
        if (!*out)
                strcpy(out, "/");
        return out;
}

char *tree_link_devpath(const Tree *t, const char *rel)
{
        _cleanup_(freep) char *p = tree_path(t, rel), *base = NULL;
        char target[PATH_MAX];
        const char *slash;
        ssize_t len;

        while (*rel == '/')
                rel++;
        len = p ? readlink(p, target, sizeof(target) - 1) : -1;
        if (len < 0 || target[0] == '/')
                return NULL;
        target[len] = 0;
        slash = strrchr(rel, '/');
        base = slash ? strndup(rel, (size_t) (slash - rel)) : strdup("");
        return base ? resolve(base, target) : NULL;
}

int tree_block_devs(const Tree *t, TreeDev **ret, size_t *ret_n)
{
        _cleanup_(strv_freep) char **names = tree_list(t, "class/block", 'l');
        size_t n = strv_length(names), k = 0;
        TreeDev *devs = calloc(n + 1, sizeof(TreeDev));

        if (!devs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                _cleanup_(freep) char *link = path_join("class/block", names[i]), *devpath = NULL,
                                      *part = NULL;

                devpath = link ? tree_link_devpath(t, link) : NULL;
                if (!devpath || !tree_is_dir(t, devpath))
                        continue;
                part = path_join(devpath, "partition");
                devs[k].partition = part && tree_exists(t, part);
                devs[k].name = strdup(names[i]);
                devs[k].devpath = TAKE_PTR(devpath);
                if (!devs[k++].name)
                        return -ENOMEM;
        }
        *ret = devs;
        *ret_n = k;
        return 0;
}

void tree_devs_free(TreeDev *d, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(d[i].name);
                free(d[i].devpath);
        }
        free(d);
}

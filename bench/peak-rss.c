/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One run of a command: its wall time, CPU time and peak RSS (bench/scale.py).
 *
 *   peak-rss CMD [ARG...]
 *
 * Prints one line of JSON: {"wall_s": .., "cpu_s": .., "maxrss_kb": .., "status": ..}; CMD's
 * stdout goes to /dev/null, its stderr stays.  A process's peak RSS counts the memory it had
 * before exec(), so CMD must be forked from a small process like this one, not from Python.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
        struct rusage ru;
        int status;
        double t0;
        pid_t pid;

        if (argc < 2) {
                fprintf(stderr, "usage: peak-rss CMD [ARG...]\n");
                return 2;
        }
        t0 = now();
        pid = fork();
        if (pid < 0) {
                perror("fork");
                return 1;
        }
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

                if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
                        _exit(127);
                execvp(argv[1], argv + 1);
                perror(argv[1]);
                _exit(127);
        }
        if (wait4(pid, &status, 0, &ru) < 0) {
                perror("wait4");
                return 1;
        }
        printf("{\"wall_s\": %.6f, \"cpu_s\": %.6f, \"maxrss_kb\": %ld, \"status\": %d}\n", now() - t0,
               ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
               ru.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        return 0;
}

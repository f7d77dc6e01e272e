/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer entry point for uevent_parse().  Built by meson: fuzz-uevent-replay replays the corpus
 * in `meson test --suite fuzz`; with clang and -Dfuzzer=true, fuzz-uevent is the libFuzzer binary:
 *
 *   ./build-fuzz/tests/fuzz/fuzz-uevent -max_len=9000 NEW_INPUTS_DIR tests/fuzz/corpus/uevent
 *
 * Beyond "no crash", every accepted event is checked against what uevent.h
 * promises, so that a parser bug that merely lets bad input through is also
 * a finding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "fuzz.h"
#include "uevent/uevent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        Uevent *u = NULL;
        const char *action;
        int r;

        r = uevent_parse(data, size, &u);
        if (r < 0) {
                if (u)
                        abort(); /* ret must stay untouched on failure */
                return 0;
        }

        action = uevent_action_to_string(u->action);
        if (!action || !u->devpath || u->devpath[0] != '/' || strstr(u->devpath, "//") ||
            strstr(u->devpath, "/../") || u->n_env < 2 || u->n_env > UEVENT_VARS_MAX)
                abort();
        if (!uevent_get(u, "ACTION") || strcmp(uevent_get(u, "ACTION"), action) != 0)
                abort();
        if (uevent_get(u, "DEVPATH") != u->devpath)
                abort();
        if (u->devpath_old && u->action != UEVENT_MOVE) /* a synthetic move has none */
                abort();
        for (size_t i = 0; i < u->n_env; i++) {
                /* Keys are unique: the first match is this one. */
                if (uevent_get(u, u->env_keys[i]) != u->env_values[i])
                        abort();
                /* Every value goes out as a D-Bus string. */
                if (!utf8_is_valid(u->env_values[i]))
                        abort();
        }

        uevent_free(u);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "blkmodel/names.h"
#include "bus/bus-internal.h"
#include "tests.h"
#include "bus-pair.h"

/*
 * bus_event_bound() against what sd-bus really marshals: the Uevent signal and a GetEvents reply are
 * sent only when that bound is within the bus's limit (--max-message-size), so a bound below the real
 * size lets through a message the bus drops the daemon for.  The body's length is read from the
 * message's fixed header as it comes out of the socket.
 */

typedef struct Pair {
        sd_bus *ours, *peer;
        int raw; /* the peer's end, read directly once both are ready */
} Pair;

static int pair_open(Pair *c)
{
        *c = (Pair){.raw = -1};
        return bus_pair_open(0, 0, &c->ours, &c->peer, &c->raw);
}

static void pair_close(Pair *c)
{
        sd_bus_close_unref(c->ours);
        sd_bus_close_unref(c->peer);
}

/* The body's length of the Uevent signal of e, as sent. */
static int64_t signal_body_size(Pair *c, const EventRecord *e)
{
        sd_bus_message *s = NULL;
        uint8_t hdr[16];
        uint32_t len, fields;
        size_t rest;
        int r;

        r = sd_bus_message_new_signal(c->ours, &s, BLKMODEL_MANAGER_PATH, BLKMODEL_IFACE_MANAGER, "Uevent");
        if (r >= 0)
                r = bus_append_event(s, e);
        if (r >= 0)
                r = sd_bus_send(c->ours, s, NULL);
        sd_bus_message_unref(s);
        if (r < 0 || sd_bus_flush(c->ours) < 0)
                return -1;
        if (recv(c->raw, hdr, sizeof(hdr), MSG_WAITALL) != (ssize_t) sizeof(hdr) ||
            bus_pair_header(hdr, &len, &fields, &rest) < 0)
                return -1;
        /* The rest of the message, so that the next one starts the socket's bytes. */
        char *buf = malloc(rest ? rest : 1);
        if (!buf)
                return -1;
        ssize_t n = recv(c->raw, buf, rest, MSG_WAITALL);
        free(buf);
        return n == (ssize_t) rest ? (int64_t) len : -1;
}

/* n env entries, key key_len bytes and value value_len bytes each (keys distinct). */
static void check_bound(Pair *c, size_t n, size_t key_len, size_t value_len)
{
        char **keys = calloc(n + 1, sizeof(char *)), **values = calloc(n + 1, sizeof(char *));
        EventRecord e = {.seqnum = 12345,
                         .action = (char *) "change",
                         .devpath = (char *) "/devices/virtual/block/loop9",
                         .object_path = (char *) "/org/blkmodel1/block/loop9",
                         .n_env = n,
                         .env_keys = keys,
                         .env_values = values};

        for (size_t i = 0; keys && values && i < n; i++) {
                keys[i] = malloc(key_len + 1);
                values[i] = malloc(value_len + 1);
                if (!keys[i] || !values[i])
                        break;
                memset(keys[i], 'K', key_len);
                for (size_t j = 0, v = i; j < key_len && j < 4; j++, v /= 26)
                        keys[i][key_len - 1 - j] = (char) ('A' + v % 26);
                keys[i][key_len] = 0;
                memset(values[i], 'v', value_len);
                values[i][value_len] = 0;
        }
        int64_t real = signal_body_size(c, &e);
        size_t bound = bus_event_bound(&e);
        CHECK(real > 0);
        CHECK(real >= 0 && bound >= (size_t) real);
        if (real >= 0 && bound < (size_t) real)
                fprintf(stderr, "%zu entries of %zu+%zu bytes: bound %zu, marshalled %" PRId64 "\n", n, key_len,
                        value_len, bound, real);
        for (size_t i = 0; keys && values && i < n; i++) {
                free(keys[i]);
                free(values[i]);
        }
        free(keys);
        free(values);
}

int main(void)
{
        Pair c;

        if (pair_open(&c) < 0) {
                CHECK(!"cannot open a connection pair");
                return tests_summary();
        }
        /* Every alignment a key and a value can leave, few entries and many (a uevent file's
         * hundreds of lines make up a rescan's synthesized event). */
        for (size_t k = 1; k <= 9; k++)
                for (size_t v = 0; v <= 9; v++) {
                        check_bound(&c, 1, k, v);
                        check_bound(&c, 700, k, v);
                }
        check_bound(&c, 0, 1, 1);
        pair_close(&c);
        return tests_summary();
}

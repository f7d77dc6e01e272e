/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>

#include "base/log-ratelimit.h"
#include "base/log.h"
#include "bus/bus-internal.h"
#include "bus/errors.h"

/*
 * Who may make the privileged calls (SPEC §6): root and the daemon's own user without asking
 * anyone, everybody else if polkit authorizes the call's action.  Nothing here waits: the caller's
 * uid comes from the bus and polkit's verdict from polkitd, both asked asynchronously, and the call
 * is answered when they have spoken.  Until then an Authorization keeps a reference on the call.
 */

#define POLKIT_SERVICE "org.freedesktop.PolicyKit1"
#define POLKIT_PATH "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_INTERFACE "org.freedesktop.PolicyKit1.Authority"
#define POLKIT_ALLOW_USER_INTERACTION 1u

/* A person may take a while to type a password; without interaction polkit answers at once (sd-bus's
 * default timeout). */
#define INTERACTIVE_TIMEOUT_USEC (UINT64_C(300) * 1000 * 1000)

/* Each waiting call holds its message: a bound, so that a flood of calls cannot grow without end. */
#define AUTHORIZATIONS_MAX 1024
/* A read that waits only for its caller's uid (bus_with_caller()) waits one bus round trip, and every
 * new caller's first read is one: under the polkit bound, a burst of 2,000 new clients' reads had
 * 923 refused, with the error that tells of a reply too large to send.  Its own, higher bound: the
 * system bus takes 2,048 connections at most. */
#define LOOKUPS_MAX 16384

struct Authorization {
        Publisher *publisher;
        sd_bus_message *request;
        sd_bus_slot *slot; /* the question in flight: the caller's uid, then polkit's verdict */
        const char *action;
        char **details; /* key, value, …: what polkit rules see with action.lookup() */
        uid_t uid;
        BusAuthorized authorized;
        BusCallerKnown known; /* instead of authorized: a read that only wants to know who asks */
        Authorization *prev, *next;
};

static Authorization *authorization_free(Authorization *a)
{
        Publisher *p = a->publisher;

        if (a->prev)
                a->prev->next = a->next;
        else
                p->authorizations = a->next;
        if (a->next)
                a->next->prev = a->prev;
        p->n_authorizations--;
        if (a->known)
                p->n_lookups--;
        sd_bus_slot_unref(a->slot);
        sd_bus_message_unref(a->request);
        strv_free(a->details);
        free(a);
        return NULL;
}

void bus_authorizations_cancel(Publisher *p)
{
        while (p->authorizations) {
                bus_reply_exiting(p->authorizations->request);
                authorization_free(p->authorizations);
        }
}

/* Who passes without polkit, for the error texts: they must say exactly that. */
static const char *without_polkit(void)
{
        static char buf[64];

        if (geteuid() == 0)
                return "root";
        (void) snprintf(buf, sizeof(buf), "root and uid %" PRIu32 " (blkmodeld's own)",
                        (uint32_t) geteuid());
        return buf;
}

/* "interface.member()" of the call, for the error texts. */
static const char *call_name(sd_bus_message *m, char *buf, size_t size)
{
        const char *i = sd_bus_message_get_interface(m);

        (void) snprintf(buf, size, "%s%s%s()", strempty(i), i ? "." : "",
                        strempty(sd_bus_message_get_member(m)));
        return buf;
}

static bool uid_is_privileged(uid_t uid)
{
        return uid == 0 || uid == geteuid();
}

/* Answers the call: with denied, or with whatever the privileged part answers. */
static void authorization_finish(Authorization *a, const sd_bus_error *denied)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (denied) {
                /* Any caller can make these, as many as it likes: a caller that leaves before its
                 * uid comes back makes one for each call. */
                if (a->uid == (uid_t) -1)
                        log_ratelimit_info("Refused a call by %s: %s",
                                           strempty(sd_bus_message_get_sender(a->request)), denied->message);
                else
                        log_ratelimit_info("Refused a call by uid %" PRIu32 ": %s", (uint32_t) a->uid,
                                           denied->message);
                r = sd_bus_reply_method_error(a->request, denied);
        } else {
                /* The privileged part reads the arguments again, from the start. */
                r = sd_bus_message_rewind(a->request, true);
                if (r >= 0 && a->known)
                        r = a->known(a->publisher, a->request, uid_is_privileged(a->uid), &error);
                else if (r >= 0)
                        r = a->authorized(a->publisher, a->request, &error);
                if (r < 0 && sd_bus_error_is_set(&error))
                        r = sd_bus_reply_method_error(a->request, &error);
                else if (r < 0)
                        r = sd_bus_reply_method_errno(a->request, r, NULL);
        }
        if (r < 0) {
                char buf[256];
                log_ratelimit_warning_errno(r, "Cannot answer %s: %m",
                                            call_name(a->request, buf, sizeof(buf)));
        }
        authorization_free(a);
}

static int on_polkit_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
        _cleanup_(sd_bus_error_free) sd_bus_error denied = SD_BUS_ERROR_NULL;
        Authorization *a = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        int authorized = 0, challenge = 0, r;
        char buf[256];
        const char *call = call_name(a->request, buf, sizeof(buf));

        a->slot = sd_bus_slot_unref(a->slot);
        if (e) {
                if (sd_bus_error_has_name(e, SD_BUS_ERROR_SERVICE_UNKNOWN) ||
                    sd_bus_error_has_name(e, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                        (void) bus_error_access_denied(&denied,
                                                       "%s is allowed to %s, and to others if polkit "
                                                       "authorizes %s, but polkit (%s) is not available on "
                                                       "this bus.",
                                                       call, without_polkit(), a->action, POLKIT_SERVICE);
                else
                        (void) bus_error_access_denied(&denied,
                                                       "%s is allowed to %s, and to others if polkit "
                                                       "authorizes %s, but polkit could not decide: %s: %s",
                                                       call, without_polkit(), a->action, e->name,
                                                       strempty(e->message));
                authorization_finish(a, &denied);
                return 0;
        }

        r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
        if (r >= 0)
                r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
        if (r < 0)
                (void) bus_error_access_denied(&denied, "%s: polkit's answer for %s is unreadable: %s", call,
                                               a->action, strerror(-r));
        else if (authorized) {
                authorization_finish(a, NULL);
                return 0;
        } else if (challenge && sd_bus_message_get_allow_interactive_authorization(a->request) <= 0)
                /* polkit would ask for a password, but the caller did not let us make it wait for one. */
                (void) bus_error_interactive_authorization_required(
                                &denied,
                                "%s needs authentication for %s; call with interactive authorization "
                                "allowed, with a polkit authentication agent running.",
                                call, a->action);
        else
                (void) bus_error_access_denied(&denied,
                                               "%s is allowed to %s, and to others if polkit authorizes %s; "
                                               "polkit did not authorize uid %" PRIu32 "%s.",
                                               call, without_polkit(), a->action, (uint32_t) a->uid,
                                               /* Allowed to wait, yet still a challenge: no agent asked. */
                                               challenge ? " (it needs authentication, and no polkit "
                                                           "authentication agent is there to ask for it)"
                                                         : "");
        authorization_finish(a, &denied);
        return 0;
}

static int ask_polkit(Authorization *a)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        sd_bus *bus = a->publisher->bus;
        bool interactive = sd_bus_message_get_allow_interactive_authorization(a->request) > 0;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, POLKIT_SERVICE, POLKIT_PATH, POLKIT_INTERFACE,
                                           "CheckAuthorization");
        /* The subject is the caller's connection: polkit asks the bus who is behind it, so no pid race. */
        if (r >= 0)
                r = sd_bus_message_append(m, "(sa{sv})s", "system-bus-name", 1, "name", "s",
                                          sd_bus_message_get_sender(a->request), a->action);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "{ss}");
        for (char **d = a->details; r >= 0 && d && d[0] && d[1]; d += 2)
                r = sd_bus_message_append(m, "{ss}", d[0], d[1]);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_append(m, "us", interactive ? POLKIT_ALLOW_USER_INTERACTION : 0, "");
        if (r >= 0)
                r = sd_bus_call_async(bus, &a->slot, m, on_polkit_reply, a,
                                      interactive ? INTERACTIVE_TIMEOUT_USEC : 0);
        if (r >= 0)
                log_debug("Asked polkit whether uid %" PRIu32 " may %s.", (uint32_t) a->uid, a->action);
        return r;
}

/*
 * Unique names are never given out twice, so what a sender's uid was stays true: remembered, a
 * read needs no round trip to the bus.  Bounded: forgotten all at once when full.
 */
#define UIDS_MAX 1024

/* What the uids cache holds: a sender's uid under its unique name. */
typedef struct KnownUid {
        uid_t uid;
        char sender[];
} KnownUid;

static const char *known_uid_sender(const void *u)
{
        return ((const KnownUid *) u)->sender;
}

void bus_uids_init(Publisher *p)
{
        hashmap_init(&p->uids, known_uid_sender);
}

static void remember_uid(Publisher *p, const char *sender, uid_t uid)
{
        KnownUid *u;

        if (!sender || hashmap_get(&p->uids, sender))
                return;
        if (hashmap_size(&p->uids) >= UIDS_MAX)
                bus_uids_forget(p);
        u = malloc(sizeof(KnownUid) + strlen(sender) + 1);
        if (!u)
                return;
        u->uid = uid;
        strcpy(u->sender, sender);
        if (hashmap_put(&p->uids, u) < 0)
                free(u);
}

void bus_uids_forget(Publisher *p)
{
        KnownUid *u;
        size_t i = 0;

        while ((u = hashmap_iterate(&p->uids, &i)))
                free(u);
        hashmap_deinit(&p->uids);
}

static int on_uid_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
        _cleanup_(sd_bus_error_free) sd_bus_error denied = SD_BUS_ERROR_NULL;
        Authorization *a = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        uint32_t uid;
        int r;

        a->slot = sd_bus_slot_unref(a->slot);
        r = e ? -sd_bus_error_get_errno(e) : sd_bus_message_read(reply, "u", &uid);
        if (r < 0) {
                /* Most likely the caller has gone: nobody will read the answer. */
                (void) bus_error_access_denied(&denied, "Cannot determine the caller's identity: %s",
                                               e ? strempty(e->message) : strerror(-r));
                authorization_finish(a, &denied);
                return 0;
        }
        a->uid = (uid_t) uid;
        remember_uid(a->publisher, sd_bus_message_get_sender(a->request), a->uid);
        if (a->known || uid_is_privileged(a->uid)) {
                authorization_finish(a, NULL);
                return 0;
        }
        r = ask_polkit(a);
        if (r < 0) {
                (void) bus_error_access_denied(&denied, "Cannot ask polkit about %s: %s", a->action,
                                               strerror(-r));
                authorization_finish(a, &denied);
        }
        return 0;
}

static int authorize(Publisher *p, sd_bus_message *msg, const char *action, const char *const *details,
                     BusAuthorized authorized, BusCallerKnown known, sd_bus_error *error)
{
        const char *sender = sd_bus_message_get_sender(msg);
        sd_bus_creds *attached = sd_bus_message_get_creds(msg);
        Authorization *a;
        size_t n = 0;
        int r;

        /* Whoever runs next reads the arguments from the start, now or later. */
        r = sd_bus_message_rewind(msg, true);
        if (r < 0)
                return r;

        /*
         * Known without asking anyone: a direct connection's peer (from the socket), or credentials
         * the bus attached to the message.  Otherwise the bus is asked below, without waiting:
         * sd_bus_query_sender_creds() would block the loop on the bus daemon.
         */
        if (!sender || (attached && (sd_bus_creds_get_mask(attached) & SD_BUS_CREDS_EUID))) {
                _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
                uid_t euid;

                r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds);
                if (r >= 0)
                        r = sd_bus_creds_get_euid(creds, &euid);
                if (r < 0)
                        return bus_error_errno(error, r, "Cannot determine the caller's identity");
                if (known)
                        return known(p, msg, uid_is_privileged(euid), error);
                if (uid_is_privileged(euid))
                        return authorized(p, msg, error);
                if (!sender) {
                        char buf[256];
                        return bus_error_access_denied(error,
                                                       "%s is allowed to %s; on a direct connection "
                                                       "there is no polkit to ask for %s.",
                                                       call_name(msg, buf, sizeof(buf)), without_polkit(),
                                                       action);
                }
        }

        const KnownUid *cached = hashmap_get(&p->uids, sender);
        uid_t cached_uid = cached ? cached->uid : (uid_t) -1;
        if (cached && known)
                return known(p, msg, uid_is_privileged(cached_uid), error);
        if (cached && uid_is_privileged(cached_uid))
                return authorized(p, msg, error);
        unsigned waiting = known ? p->n_lookups : p->n_authorizations - p->n_lookups;
        if (waiting >= (known ? LOOKUPS_MAX : AUTHORIZATIONS_MAX))
                return bus_error_limits_exceeded(
                                error, "%u calls are waiting for %s; try again later.", waiting,
                                known ? "their caller's identity" : "authorization");
        a = calloc(1, sizeof(Authorization));
        if (!a)
                return -ENOMEM;
        a->publisher = p;
        a->request = sd_bus_message_ref(msg);
        a->action = action;
        a->uid = (uid_t) -1; /* not known yet */
        a->authorized = authorized;
        a->known = known;
        a->next = p->authorizations;
        if (a->next)
                a->next->prev = a;
        p->authorizations = a;
        p->n_authorizations++;
        if (known)
                p->n_lookups++;

        r = 0;
        for (const char *const *d = details; d && *d && r >= 0; d++)
                r = strv_extend(&a->details, &n, *d);
        if (r >= 0 && cached) {
                a->uid = cached_uid;
                r = ask_polkit(a);
        } else if (r >= 0 && attached && sd_bus_creds_get_euid(attached, &a->uid) >= 0)
                r = ask_polkit(a);
        else if (r >= 0)
                r = sd_bus_call_method_async(p->bus, &a->slot, "org.freedesktop.DBus",
                                             "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                             "GetConnectionUnixUser", on_uid_reply, a, "s", sender);
        if (r < 0) {
                authorization_free(a);
                return bus_error_errno(error, r, "Cannot check the caller's authorization");
        }
        /* Handled: the answer comes later. */
        return 1;
}

int bus_authorize(Publisher *p, sd_bus_message *msg, const char *action, const char *const *details,
                  BusAuthorized authorized, sd_bus_error *error)
{
        return authorize(p, msg, action, details, authorized, NULL, error);
}

int bus_with_caller(Publisher *p, sd_bus_message *msg, BusCallerKnown known, sd_bus_error *error)
{
        return authorize(p, msg, NULL, NULL, NULL, known, error);
}

# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a caching D-Bus client holds, checked against what the daemon says.

Two caches follow the daemon while a test changes sysfs:

* GLib's own Gio.DBusObjectManagerClient, as GDBus applications (udisks2's
  clients among them) use it: its proxies' cached properties are exactly
  what GetManagedObjects, InterfacesAdded and PropertiesChanged delivered.
* A strict cache of our own, fed the same signals, which also fails the
  test when a PropertiesChanged names a property whose value did not
  change.

exact() then compares both with a fresh GetAll of every interface of every
object, leaving out what the daemon's introspection says it does not
announce (EmitsChangedSignal "false"; "invalidates" only by name).
"""

import time

from gi.repository import Gio, GLib

import blkmodeltest as bt


def _loop_until(pred, timeout):
    ctx = GLib.MainContext.default()
    deadline = time.monotonic() + timeout
    while True:
        while ctx.pending():
            ctx.iteration(False)
        ok, why = pred()
        if ok:
            return None
        if time.monotonic() >= deadline:
            return why
        time.sleep(0.02)


def call_many(conn, calls, window=128):
    """Each call (path, interface, method, GLib.Variant parameters or None)
    on org.blkmodel1, with up to window of them on their way at once: one
    at a time, each round trip through the bus and GDBus's thread costs ~1 ms
    of waiting, which a model of thousands of objects pays thousands of
    times.  Returns the replies' unpacked tuples in the calls' order, a
    GLib.Error for a call that failed.  The replies are dispatched on a
    context of their own: signals wait on the default one, as during
    call_sync, so the caches stay as they were while the truth is read."""
    results = [None] * len(calls)
    state = {"next": 0, "in_flight": 0}
    ctx = GLib.MainContext()

    def done(conn, res, i):
        state["in_flight"] -= 1
        try:
            results[i] = conn.call_finish(res).unpack()
        except GLib.Error as e:
            results[i] = e

    ctx.push_thread_default()
    try:
        while state["next"] < len(calls) or state["in_flight"]:
            while state["next"] < len(calls) and state["in_flight"] < window:
                i = state["next"]
                path, iface, method, params = calls[i]
                state["next"] += 1
                state["in_flight"] += 1
                conn.call(bt.BUS_NAME, path, iface, method, params, None,
                          Gio.DBusCallFlags.NONE, -1, None, done, i)
            ctx.iteration(True)
    finally:
        ctx.pop_thread_default()
    return results


def read_model(conn):
    """Every object's every interface, from GetAll now: {path: {interface:
    properties}}, None for an interface whose GetAll failed (its object
    gone meanwhile)."""
    reply = conn.call_sync(
        bt.BUS_NAME, bt.ROOT, bt.OM, "GetManagedObjects", None, None,
        Gio.DBusCallFlags.NONE, -1, None).get_child_value(0)
    # Only the names, not the values: unpacking all of them took seconds of 600 disks.
    paths, keys = [], []
    for i in range(reply.n_children()):
        entry = reply.get_child_value(i)
        path, ifaces = entry.get_child_value(0).get_string(), entry.get_child_value(1)
        paths.append(path)
        keys += [(path, ifaces.get_child_value(j).get_child_value(0).get_string())
                 for j in range(ifaces.n_children())]
    replies = call_many(conn, [(path, bt.PROPS, "GetAll", GLib.Variant("(s)", (iface,)))
                               for path, iface in keys])
    fresh = {path: {} for path in paths}
    for (path, iface), r in zip(keys, replies):
        fresh[path][iface] = None if isinstance(r, GLib.Error) else r[0]
    return fresh


class CachingClients:
    def __init__(self, dm):
        self.dm = dm
        self.conn = bt.connect()
        self.fresh = None   # the last truth exact() compared with
        # Subscribed before the first GetManagedObjects, so that nothing
        # falls between the snapshot and the signals.
        self.violations = []
        self.pending = []
        self.strict = None  # until the snapshot
        self.sub = self.conn.signal_subscribe(
            bt.BUS_NAME, None, None, None, None, Gio.DBusSignalFlags.NONE,
            self._on_signal)
        self.glib = Gio.DBusObjectManagerClient.new_sync(
            self.conn, Gio.DBusObjectManagerClientFlags.NONE, bt.BUS_NAME,
            bt.ROOT, None, None, None)
        # Asked on the context the signals are dispatched on, as GDBus
        # dispatches a connection's messages in the order they came.  The
        # signals that came before the reply are applied after it, as
        # org.blkmodel1(5) says (a reply built in slices holds what there was
        # when the call came), but a value they tell that the reply has
        # already is no violation: the reply read it after the change.
        replies = []
        self.conn.call(
            bt.BUS_NAME, bt.ROOT, bt.OM, "GetManagedObjects", None, None,
            Gio.DBusCallFlags.NONE, -1, None,
            lambda conn, res: replies.append(conn.call_finish(res)))
        ctx = GLib.MainContext.default()
        while not replies:
            ctx.iteration(True)
        self.strict = {p: {i: dict(props) for i, props in ifaces.items()}
                       for p, ifaces in replies[0].unpack()[0].items()}
        self.announce = {}  # (path, iface) -> {prop: emits}
        self.introspected = set()
        self._apply(during_the_call=True)

    def close(self):
        self.conn.signal_unsubscribe(self.sub)
        self.conn.close_sync(None)

    # ---- the strict cache ----------------------------------------------

    def _on_signal(self, conn, sender, path, iface, member, params):
        self.pending.append((path, iface, member, params.unpack()))
        if self.strict is not None:
            self._apply()

    def _apply(self, during_the_call=False):
        for path, iface, member, args in self.pending:
            if member == "InterfacesAdded":
                obj = self.strict.setdefault(args[0], {})
                for i, props in args[1].items():
                    obj[i] = dict(props)
            elif member == "InterfacesRemoved":
                obj = self.strict.get(args[0], {})
                for i in args[1]:
                    obj.pop(i, None)
                if not obj:
                    self.strict.pop(args[0], None)
            elif member == "PropertiesChanged":
                cached = self.strict.get(path, {}).get(args[0])
                if cached is None:
                    self.violations.append(
                        "PropertiesChanged on %s %s, which no "
                        "InterfacesAdded announced" % (path, args[0]))
                    continue
                for name, value in args[1].items():
                    if name in cached and cached[name] == value and not during_the_call:
                        self.violations.append(
                            "PropertiesChanged %s %s.%s = %r: unchanged"
                            % (path, args[0], name, value))
                    cached[name] = value
                for name in args[2]:
                    cached.pop(name, None)
        self.pending.clear()

    # ---- the truth -----------------------------------------------------

    def _emits(self, path, iface):
        key = (path, iface)
        if key not in self.announce:
            for name, props in bt.emits_changed_signal(
                    self.dm.introspect(path)).items():
                self.announce[(path, name)] = props
        return self.announce.get(key, {})

    def _introspect_all(self, paths):
        """What _emits() reads, for every object not read yet, all at once."""
        todo = [p for p in paths if p not in self.introspected]
        replies = call_many(self.conn, [(p, "org.freedesktop.DBus.Introspectable",
                                         "Introspect", None) for p in todo])
        for path, r in zip(todo, replies):
            if isinstance(r, GLib.Error):
                continue    # gone meanwhile: _emits() asks again
            self.introspected.add(path)
            for name, props in bt.emits_changed_signal(r[0]).items():
                self.announce.setdefault((path, name), props)

    def _fresh(self):
        """Every object's every interface, from GetAll now (None where it
        went meanwhile: retry)."""
        return read_model(self.conn)

    def glib_cache(self):
        cache = {}
        for obj in self.glib.get_objects():
            ifaces = {}
            for proxy in obj.get_interfaces():
                ifaces[proxy.get_interface_name()] = {
                    n: proxy.get_cached_property(n).unpack()
                    for n in proxy.get_cached_property_names()}
            cache[obj.get_object_path()] = ifaces
        return cache

    def _differences(self, name, cache, fresh):
        out = []
        if set(cache) != set(fresh):
            return ["%s: objects %s missing, %s extra" % (
                name, sorted(set(fresh) - set(cache)),
                sorted(set(cache) - set(fresh)))]
        for path, ifaces in fresh.items():
            if set(ifaces) != set(cache[path]):
                out.append("%s: %s interfaces %s, want %s" % (
                    name, path, sorted(cache[path]), sorted(ifaces)))
                continue
            for iface, props in ifaces.items():
                if props is None:
                    out.append("%s vanished during the check" % path)
                    continue
                emits = self._emits(path, iface)
                mine = cache[path][iface]
                for prop in sorted(set(mine) - set(props)):
                    out.append("%s: %s %s.%s cached, the object has none" % (
                        name, path, iface, prop))
                for prop, value in props.items():
                    how = emits.get(prop, "true")
                    if how == "false":
                        continue
                    if how == "invalidates" and prop not in mine:
                        continue
                    if prop not in mine:
                        out.append("%s: %s %s.%s not cached" % (
                            name, path, iface, prop))
                    elif mine[prop] != value:
                        out.append("%s: %s %s.%s cached %r, Get says %r" % (
                            name, path, iface, prop, mine[prop], value))
        return out

    def exact(self, timeout=10):
        """Both caches equal a fresh GetAll everywhere, within timeout (the
        poll interval for changes nobody announced); and no signal so far
        named a property that did not change.  Returns a failure text or
        None."""
        def check():
            self._apply()
            fresh = self.fresh = self._fresh()
            self._introspect_all(fresh)
            diffs = (self._differences("GLib", self.glib_cache(), fresh) +
                     self._differences("strict", self.strict, fresh))
            return not diffs, diffs

        why = _loop_until(check, timeout)
        if self.violations:
            return "\n".join(self.violations)
        return None if why is None else "\n".join(why[:40])

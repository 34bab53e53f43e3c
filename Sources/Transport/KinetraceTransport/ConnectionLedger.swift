/// A byte-stream host's open connections, by how recently each was active:
/// a connection is active when it is accepted and each time it
/// delivers a whole record; bytes that complete no record are not activity,
/// so a writer trickling a byte a second stays idle.
///
/// At the limit a new connection is always admitted: it closes a connection
/// that has delivered no record yet, the oldest first, or else the one whose
/// last record is the oldest. A phone streaming at 60 Hz is therefore the
/// last to go, whatever a flood of idle or slow connections does. Every
/// operation is O(1): two least-recently-active lists linked through a
/// dictionary of entries.
package struct ConnectionLedger {
    package let capacity: Int
    /// A connection idle for longer than this is due to be closed (nil: never).
    package let idleNs: Int64?

    private struct Entry {
        var lastActiveNs: Int64
        var delivered: Bool
        var newer: Int?
        var older: Int?
    }

    /// The two lists: connections that have delivered no record yet, and those that have.
    private struct List {
        var newest: Int?
        var oldest: Int?
    }

    private var entries: [Int: Entry] = [:]
    private var waiting = List()
    private var delivering = List()

    package init(capacity: Int, idleNs: Int64?) {
        precondition(capacity > 0, "a host serves at least one connection")
        precondition(idleNs.map { $0 > 0 } ?? true, "a connection timeout is positive")
        self.capacity = capacity
        self.idleNs = idleNs
    }

    /// Connections held now.
    package var count: Int { entries.count }

    package func holds(_ connection: Int) -> Bool { entries[connection] != nil }

    /// Admits a new connection at `nowNs`; returns the connection it displaces when the
    /// ledger is full (the caller closes it; it is no longer held).
    package mutating func admit(_ connection: Int, nowNs: Int64) -> Int? {
        precondition(entries[connection] == nil, "a connection is admitted once")
        var displaced: Int?
        if entries.count >= capacity, let victim = waiting.oldest ?? delivering.oldest {
            remove(victim)
            displaced = victim
        }
        entries[connection] = Entry(lastActiveNs: nowNs, delivered: false)
        pushNewest(connection)
        return displaced
    }

    /// The connection delivered a whole record at `nowNs`.
    package mutating func delivered(_ connection: Int, nowNs: Int64) {
        guard let entry = entries[connection] else { return }
        unlink(connection)
        entries[connection]!.delivered = true
        entries[connection]!.lastActiveNs = Swift.max(entry.lastActiveNs, nowNs)
        pushNewest(connection)
    }

    /// The connection is gone.
    package mutating func remove(_ connection: Int) {
        guard entries[connection] != nil else { return }
        unlink(connection)
        entries[connection] = nil
    }

    /// The connections idle for longer than the timeout at `nowNs`, oldest first, removed
    /// from the ledger (the caller closes them).
    package mutating func expire(nowNs: Int64) -> [Int] {
        guard let idleNs else { return [] }
        var expired: [Int] = []
        for delivered in [false, true] {
            while let oldest = (delivered ? delivering : waiting).oldest, let entry = entries[oldest],
                  nowNs > entry.lastActiveNs, nowNs - entry.lastActiveNs > idleNs {
                remove(oldest)
                expired.append(oldest)
            }
        }
        return expired
    }

    private mutating func unlink(_ connection: Int) {
        guard let entry = entries[connection] else { return }
        var list = entry.delivered ? delivering : waiting
        if let newer = entry.newer { entries[newer]!.older = entry.older } else { list.newest = entry.older }
        if let older = entry.older { entries[older]!.newer = entry.newer } else { list.oldest = entry.newer }
        entries[connection]!.newer = nil
        entries[connection]!.older = nil
        if entry.delivered { delivering = list } else { waiting = list }
    }

    private mutating func pushNewest(_ connection: Int) {
        let delivered = entries[connection]!.delivered
        var list = delivered ? delivering : waiting
        entries[connection]!.older = list.newest
        entries[connection]!.newer = nil
        if let newest = list.newest { entries[newest]!.newer = connection }
        list.newest = connection
        if list.oldest == nil { list.oldest = connection }
        if delivered { delivering = list } else { waiting = list }
    }
}

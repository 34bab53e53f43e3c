import KinetraceWire

/// A host's bounded table of controllers (the state bounds a spec sets): numbers for the
/// host model, given on first sight and recycled after a controller is
/// forgotten, either idle for longer than `idleNs` or the least recently
/// heard when a new one arrives at `capacity`. Lookups, insertions and
/// evictions are O(1): a dictionary plus a least-recently-heard list kept
/// in arrays indexed by number.
package struct ControllerTable<Controller: Hashable> {
    /// Why a controller was forgotten.
    package enum Eviction: Hashable, Sendable {
        case idle
        case overCapacity
    }

    package let capacity: Int
    /// Forget a controller not heard from for longer than this (nil: never).
    package let idleNs: Int64?

    private var numbers: [Controller: Int] = [:]
    private var owners: [Controller?] = []
    private var lastHeardNs: [Int64] = []
    /// Least-recently-heard list over numbers: `newer`/`older` links, -1 at the ends.
    private var newer: [Int] = []
    private var older: [Int] = []
    private var newest = -1
    private var oldest = -1
    private var freeNumbers: [Int] = []

    package init(capacity: Int, idleNs: Int64?) {
        precondition(capacity > 0, "a host serves at least one controller")
        precondition(idleNs.map { $0 > 0 } ?? true, "an idle timeout is positive")
        self.capacity = capacity
        self.idleNs = idleNs
    }

    /// Controllers held now.
    package var count: Int { numbers.count }

    /// Whether the table holds state for the controller now.
    package func holds(_ controller: Controller) -> Bool { numbers[controller] != nil }

    /// The controller's number at `nowNs`, and the numbers forgotten to make it so (each
    /// must be forgotten by the host model before the number is used).
    package mutating func number(of controller: Controller, nowNs: Int64, evicted: (Int, Eviction) -> Void) -> Int {
        if let idleNs {
            while oldest >= 0, nowNs > lastHeardNs[oldest], nowNs - lastHeardNs[oldest] > idleNs {
                evict(oldest, .idle, evicted)
            }
        }
        if let known = numbers[controller] {
            lastHeardNs[known] = Swift.max(lastHeardNs[known], nowNs)
            unlink(known)
            pushNewest(known)
            return known
        }
        if numbers.count >= capacity { evict(oldest, .overCapacity, evicted) }
        let number: Int
        if let recycled = freeNumbers.popLast() {
            number = recycled
            owners[number] = controller
            lastHeardNs[number] = nowNs
        } else {
            number = owners.count
            owners.append(controller)
            lastHeardNs.append(nowNs)
            newer.append(-1)
            older.append(-1)
        }
        numbers[controller] = number
        pushNewest(number)
        return number
    }

    private mutating func evict(_ number: Int, _ why: Eviction, _ evicted: (Int, Eviction) -> Void) {
        unlink(number)
        if let owner = owners[number] { numbers[owner] = nil }
        owners[number] = nil
        freeNumbers.append(number)
        evicted(number, why)
    }

    private mutating func unlink(_ number: Int) {
        let n = newer[number], o = older[number]
        if n >= 0 { older[n] = o } else { newest = o }
        if o >= 0 { newer[o] = n } else { oldest = n }
        newer[number] = -1
        older[number] = -1
    }

    private mutating func pushNewest(_ number: Int) {
        older[number] = newest
        newer[number] = -1
        if newest >= 0 { newer[newest] = number }
        newest = number
        if oldest < 0 { oldest = number }
    }
}

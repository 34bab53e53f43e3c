/// One share of a replay's controllers, for spreading a replay over several
/// processes or machines (`replay --shard K/N`).
///
/// Controller v (0-based, after fan-out) belongs to share `v mod N`: a function
/// of the controller's number and N alone, so every seed splits the same way,
/// the shares are disjoint and together hold every controller, and each share
/// gets every input controller's fanned-out copies in turn. Every shard plans
/// the whole replay and sends only its share, so its impairment draws, rate
/// queue and predicted replies are the ones the single process would have had.
package struct ReplayShard: Hashable, Sendable, CustomStringConvertible {
    /// 0-based share.
    package let index: Int
    package let count: Int

    /// The most shares: one per controller at most, and controllers number at most 65,536.
    package static let maximumCount = 65_536

    /// - Precondition: 0 ≤ index < count ≤ `maximumCount` (`parse` checks input).
    package init(index: Int, count: Int) {
        precondition(count >= 1 && count <= Self.maximumCount && (0..<count).contains(index))
        self.index = index
        self.count = count
    }

    /// The whole replay, as one process.
    package static let whole = ReplayShard(index: 0, count: 1)

    /// `K/N`, 1-based as GNU split's -n K/N.
    package var description: String { "\(index + 1)/\(count)" }

    package func contains(controller v: Int) -> Bool { v % count == index }

    /// The share's position of controller `v`, when it is in the share.
    package func local(_ v: Int) -> Int? { contains(controller: v) ? v / count : nil }

    /// The controller at the share's position `local`.
    package func global(_ local: Int) -> Int { local * count + index }

    /// How many of `total` controllers the share holds.
    package func controllers(of total: Int) -> Int { total > index ? (total - index + count - 1) / count : 0 }

    /// Parses `K/N` (1 ≤ K ≤ N), `auto` or `auto/N`. For `auto`, K comes from the
    /// first of JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID and PARALLEL_SEQ that is
    /// set, and N from `auto/N` or SLURM_ARRAY_TASK_COUNT. A Slurm task's share is its place
    /// in the array (SLURM_ARRAY_TASK_MIN and _STEP); an `auto/N` that disagrees with
    /// SLURM_ARRAY_TASK_COUNT, or an array that is not one even range, is refused. The error
    /// is one line naming the value or variable at fault.
    package static func parse(_ text: String, environment: [String: String]) -> Result<ReplayShard, ShardError> {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= 2, let first = parts.first else { return .failure(ShardError("expected K/N, auto or auto/N, got \"\(text)\"")) }
        var count: Int?
        if parts.count == 2 {
            guard let n = Int(parts[1]), (1...maximumCount).contains(n) else {
                return .failure(ShardError("the shard count in \"\(text)\" must be a whole number from 1 to \(maximumCount)"))
            }
            count = n
        }
        if first != "auto" {
            guard let count else { return .failure(ShardError("expected K/N, auto or auto/N, got \"\(text)\"")) }
            guard let k = Int(first), (1...count).contains(k) else {
                return .failure(ShardError("the shard number in \"\(text)\" must be a whole number from 1 to \(count)"))
            }
            return .success(ReplayShard(index: k - 1, count: count))
        }
        func integer(_ name: String) -> Result<Int?, ShardError> {
            guard let value = environment[name] else { return .success(nil) }
            guard let n = Int(value.trimmingSpaces), n >= 0, n <= 1 << 31 else {
                return .failure(ShardError("\(name)=\"\(value)\" is not a whole number from 0 to 2147483648"))
            }
            return .success(n)
        }
        let index: Int
        let source: String
        do throws(ShardError) {
            if let k = try integer("JOB_COMPLETION_INDEX").get() {
                index = k; source = "JOB_COMPLETION_INDEX"
            } else if let id = try integer("SLURM_ARRAY_TASK_ID").get() {
                // --array=MIN-MAX:STEP numbers its tasks MIN, MIN+STEP, …; the share is the task's place in that list.
                let low = try integer("SLURM_ARRAY_TASK_MIN").get() ?? 0
                let step = try integer("SLURM_ARRAY_TASK_STEP").get() ?? 1
                guard step >= 1 else { throw ShardError("SLURM_ARRAY_TASK_STEP=0: Slurm steps its arrays by 1 or more") }
                guard id >= low else { throw ShardError("SLURM_ARRAY_TASK_ID=\(id) is below SLURM_ARRAY_TASK_MIN=\(low)") }
                guard (id - low) % step == 0 else {
                    throw ShardError("SLURM_ARRAY_TASK_ID=\(id) is not SLURM_ARRAY_TASK_MIN=\(low) plus a multiple of SLURM_ARRAY_TASK_STEP=\(step): the array is not one even range; give K/N")
                }
                if let n = try integer("SLURM_ARRAY_TASK_COUNT").get() {
                    guard (1...maximumCount).contains(n) else { throw ShardError("SLURM_ARRAY_TASK_COUNT=\(n) must be from 1 to \(maximumCount)") }
                    if let high = try integer("SLURM_ARRAY_TASK_MAX").get(), high >= low, (high - low) / step + 1 != n {
                        throw ShardError("SLURM_ARRAY_TASK_COUNT=\(n) is not the number of tasks from SLURM_ARRAY_TASK_MIN=\(low) to SLURM_ARRAY_TASK_MAX=\(high) by \(step): the array is not one even range; give K/N")
                    }
                    // Two sources of N that disagree would leave shares no task sends (or tasks past the last share).
                    if let count, count != n {
                        throw ShardError("auto/\(count) disagrees with SLURM_ARRAY_TASK_COUNT=\(n): give auto alone, or K/N")
                    }
                    count = n
                }
                index = (id - low) / step; source = "SLURM_ARRAY_TASK_ID"
            } else if let seq = try integer("PARALLEL_SEQ").get() {
                guard seq >= 1 else { throw ShardError("PARALLEL_SEQ=0: GNU parallel numbers its jobs from 1") }
                index = seq - 1; source = "PARALLEL_SEQ"
            } else {
                throw ShardError("auto found none of JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID and PARALLEL_SEQ set: give K/N")
            }
        } catch {
            return .failure(error)
        }
        guard let count else {
            return .failure(ShardError("auto took shard \(index + 1) from \(source), but nothing says how many shards there are: give auto/N"))
        }
        guard index < count else {
            return .failure(ShardError("\(source) makes this shard \(index + 1), but there are only \(count) shard(s)"))
        }
        return .success(ReplayShard(index: index, count: count))
    }
}

package struct ShardError: Error, Hashable, Sendable, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}

extension String {
    fileprivate var trimmingSpaces: Substring {
        var s = Substring(self)
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return s
    }
}

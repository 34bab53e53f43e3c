#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Percentiles of one controller's durations in at most a few kilobytes,
/// whatever the number of values: a summary kept per controller by the hundred
/// thousand, where an HDR histogram (tens of kilobytes each) would not fit.
///
/// The first `exactCapacity` values are kept as they are, so a controller with
/// few of them gets exact percentiles. Past that they are counted in
/// logarithmic bins (value v ≥ 1 in bin ⌈log_γ v⌉, γ = 1.01/0.99), each
/// reported at the value within `relativeError` (1 %) of all it holds; 0 has a
/// bin of its own. At most `maxBins` bins are kept (4 KiB of counts, a span of
/// 7.6 × 10⁸ from the lowest bin to the highest): when values spread wider, the
/// lowest bins are merged into one, and a percentile that falls among them is
/// no longer within 1 % (`collapsed` says when that happened).
///
/// Percentiles are nearest-rank (the smallest value with at least p % of the
/// values at or below it), as an HDR histogram's are; the smallest and largest
/// values are kept exactly.
package struct DurationSketch: Sendable {
    /// Values kept exactly before the sketch switches to bins.
    package static let exactCapacity = 64
    /// The most bins kept.
    package static let maxBins = 1024
    /// How far a binned percentile may be from the value it stands for, relatively.
    package static let relativeError = 0.01
    static let gamma = (1 + relativeError) / (1 - relativeError)
    static let logGamma = log(gamma)

    /// Until `exactCapacity` values: each one.
    private var exact: [UInt64] = []
    private var binned = false
    private var zeros = 0
    /// Counts of bins `lowestBin`, `lowestBin + 1`, …; a count stops at UInt32.max.
    private var bins: [UInt32] = []
    private var lowestBin = 0
    package private(set) var count = 0
    /// The extremes, exact: the nearest ranks 1 and n.
    private var smallest = UInt64.max, largest = UInt64.min
    /// Whether values spread over more than `maxBins` bins, so the lowest were merged.
    package private(set) var collapsed = false

    package init() {}

    /// Bytes allocated for the values and counts (array storage, headers excluded).
    package var allocatedBytes: Int {
        exact.capacity * MemoryLayout<UInt64>.stride + bins.capacity * MemoryLayout<UInt32>.stride
    }

    package mutating func record(_ value: UInt64) {
        count += 1
        smallest = min(smallest, value)
        largest = max(largest, value)
        if !binned {
            if exact.count < Self.exactCapacity {
                // Grown by hand: doubling past `exactCapacity` would waste the half above it.
                if exact.count == exact.capacity { exact.reserveCapacity(min(Self.exactCapacity, max(4, 2 * exact.count))) }
                return exact.append(value)
            }
            binned = true
            let held = exact
            exact = []
            for earlier in held { addToBins(earlier) }
        }
        addToBins(value)
    }

    /// The bin of a value of at least 1.
    static func bin(of value: UInt64) -> Int {
        Int((log(Double(value)) / logGamma).rounded(.up))
    }

    /// The value a bin reports: within `relativeError` of everything in it.
    static func representative(ofBin index: Int) -> Double {
        2 * pow(gamma, Double(index)) / (gamma + 1)
    }

    private mutating func addToBins(_ value: UInt64) {
        guard value > 0 else { return zeros += 1 }
        var index = Self.bin(of: value)
        if bins.isEmpty {
            lowestBin = index
            bins.reserveCapacity(8)
            bins.append(0)
        } else if index < lowestBin {
            let highest = lowestBin + bins.count - 1
            let newLowest = max(index, highest - Self.maxBins + 1)
            if newLowest < lowestBin {
                growCapacity(to: bins.count + lowestBin - newLowest)
                bins.insert(contentsOf: repeatElement(0, count: lowestBin - newLowest), at: 0)
                lowestBin = newLowest
            }
            if index < lowestBin {
                collapsed = true
                index = lowestBin
            }
        } else if index >= lowestBin + bins.count {
            let newLowest = index - Self.maxBins + 1
            if newLowest > lowestBin { mergeBins(below: newLowest) }
            growCapacity(to: index - lowestBin + 1)
            bins.append(contentsOf: repeatElement(0, count: index - lowestBin + 1 - bins.count))
        }
        let slot = index - lowestBin
        if bins[slot] < UInt32.max { bins[slot] += 1 }
    }

    /// Adds the counts of the bins below `newLowest` into it, which becomes the lowest.
    private mutating func mergeBins(below newLowest: Int) {
        collapsed = true
        let dropped = min(newLowest - lowestBin, bins.count)
        var merged: UInt64 = 0
        for count in bins[..<dropped] { merged += UInt64(count) }
        bins.removeFirst(dropped)
        if bins.isEmpty { bins.append(0) }
        bins[0] = UInt32(min(UInt64(UInt32.max), UInt64(bins[0]) + merged))
        lowestBin = newLowest
    }

    /// Keeps the counts' allocation within `maxBins` (an array would double past it).
    private mutating func growCapacity(to needed: Int) {
        guard needed > bins.capacity else { return }
        bins.reserveCapacity(min(Self.maxBins, max(needed, 2 * bins.capacity)))
    }

    /// The nearest-rank value at `percentile` (0–100); nil when empty.
    package func value(atPercentile percentile: Double) -> Double? {
        guard count > 0 else { return nil }
        if !binned {
            let sorted = exact.sorted()
            return Double(sorted[Self.rank(percentile, of: sorted.count) - 1])
        }
        var total = zeros
        for count in bins { total += Int(count) }
        let rank = Self.rank(percentile, of: total)
        if rank == 1 { return Double(smallest) }
        if rank == total { return Double(largest) }
        var seen = zeros
        if seen >= rank { return 0 }
        for (offset, count) in bins.enumerated() {
            seen += Int(count)
            if seen >= rank { return Self.representative(ofBin: lowestBin + offset) }
        }
        return Self.representative(ofBin: lowestBin + bins.count - 1)
    }

    /// The 1-based nearest rank of `percentile` among `n` values, as an HDR histogram takes it.
    static func rank(_ percentile: Double, of n: Int) -> Int {
        let p = min(max(percentile.nextDown, 0), 100)
        return min(n, max(1, Int((p * Double(n) / 100).rounded(.up))))
    }
}

/// The clock skew in one-way delays, by the linear lower bound of Moon, Skelly and Towsley
/// (INFOCOM 1999); needs at least 2 finite points at 2 different times.
///
/// A one-way delay measured across two clocks that run at different rates drifts by
/// β·t: `delay = true delay + offset + β·t`. The true delays never fall below the path's
/// fixed delay, so the fitted line is the one that lies on or below every point
/// (tᵢ, dᵢ) and is as close to them as it can be: it minimises Σ(dᵢ − α − β·tᵢ).
/// That sum is n·(mean d − α − β·mean t), so the best line is the highest one at mean t
/// that stays below every point: the edge of the points' lower convex hull whose time
/// range holds mean t. The hull takes O(n log n) (a sort, then Andrew's monotone chain).
///
/// Units: times in seconds, delays in milliseconds. The slope is therefore in ms per s;
/// as a fraction (seconds of drift per second) it is a thousandth of that, and in parts
/// per million a thousand times it (50 ppm is 0.05 ms per s, 3 ms over a minute).
package struct SkewEstimate: Hashable, Sendable {
    /// β in ms of delay per s of time.
    package let slopeMsPerS: Double
    /// α: the line's delay at `startS`, ms (the path's floor when measuring began).
    package let floorMs: Double
    /// The earliest time, s: the line's origin and `removing`'s reference.
    package let startS: Double
    /// How many points the fit saw.
    package let points: Int
    /// Latest time − earliest time, s.
    package let spanS: Double

    /// β as a fraction: seconds of drift per second (ms per ms).
    package var skew: Double { slopeMsPerS * 1e-3 }
    /// β in parts per million.
    package var ppm: Double { slopeMsPerS * 1e3 }

    package init(slopeMsPerS: Double, floorMs: Double, startS: Double, points: Int, spanS: Double) {
        self.slopeMsPerS = slopeMsPerS
        self.floorMs = floorMs
        self.startS = startS
        self.points = points
        self.spanS = spanS
    }

    /// The lower bound's delay at time `timeS`, ms.
    package func lineMs(atS timeS: Double) -> Double { floorMs + slopeMsPerS * (timeS - startS) }

    /// Fits the line; nil for fewer than 2 points, arrays of different lengths, a value that
    /// is not finite, or no time between the first point and the last.
    package static func fit(timesS: [Double], delaysMs: [Double]) -> SkewEstimate? {
        guard timesS.count >= 2, timesS.count == delaysMs.count,
              timesS.allSatisfy(\.isFinite), delaysMs.allSatisfy(\.isFinite),
              let start = timesS.min(), let end = timesS.max(), end > start else { return nil }
        // Times from the start keep the hull's cross products well conditioned even for
        // epoch times; means are summed from the same offsets.
        var sumT = 0.0
        var byTime: [(t: Double, d: Double)] = []
        byTime.reserveCapacity(timesS.count)
        for (t, d) in zip(timesS, delaysMs) {
            byTime.append((t - start, d))
            sumT += t - start
        }
        byTime.sort { $0.t < $1.t || ($0.t == $1.t && $0.d < $1.d) }
        let hull = lowerHull(byTime)
        guard hull.count >= 2 else { return nil }
        // The edge whose time range holds mean t; at a vertex either neighbour gives the same sum.
        let meanT = sumT / Double(timesS.count)
        var k = 0
        while k < hull.count - 2 && hull[k + 1].t < meanT { k += 1 }
        let a = hull[k], b = hull[k + 1]
        let slope = (b.d - a.d) / (b.t - a.t)
        let floor = a.d - slope * a.t
        guard slope.isFinite, floor.isFinite else { return nil }
        return SkewEstimate(slopeMsPerS: slope, floorMs: floor, startS: start, points: timesS.count, spanS: end - start)
    }

    /// The lower convex hull of points sorted by time (then delay), left to right; of several
    /// points at one time only the lowest can be on it.
    static func lowerHull(_ sorted: [(t: Double, d: Double)]) -> [(t: Double, d: Double)] {
        var hull: [(t: Double, d: Double)] = []
        for point in sorted {
            if let last = hull.last, last.t == point.t { continue }  // a higher point at the same time
            while hull.count >= 2 {
                let o = hull[hull.count - 2], a = hull[hull.count - 1]
                // Keep only strict left turns: a point on or above the chord o→point is not on the lower hull.
                let cross = (a.t - o.t) * (point.d - o.d) - (a.d - o.d) * (point.t - o.t)
                if cross > 0 { break }
                hull.removeLast()
            }
            hull.append(point)
        }
        return hull
    }

    /// The delays with the skew taken out: dᵢ − β·(tᵢ − `startS`). The level at the start is
    /// kept, so the corrected delays' minimum is `floorMs`, up to rounding (the points on the line land on it).
    /// `timesS` are the delays' times, as given to `fit`; the two arrays have one length.
    package func removing(from delaysMs: [Double], timesS: [Double]) -> [Double] {
        precondition(delaysMs.count == timesS.count, "one time per delay")
        return zip(delaysMs, timesS).map { d, t in d - slopeMsPerS * (t - startS) }
    }
}

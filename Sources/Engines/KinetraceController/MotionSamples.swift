import KinetraceWire

/// Recorded IMU samples (a CSV script), played back at the stream rate by
/// linear interpolation between the two samples around each frame time.
package struct MotionSamples: Sendable, Equatable {
    package struct Sample: Sendable, Equatable {
        package var tS: Double
        package var values: [Double]  // ax ay az wx wy wz
    }
    package struct Label: Sendable, Equatable {
        package var atS: Double
        package var gesture: String
    }

    package private(set) var samples: [Sample]
    package private(set) var labels: [Label]

    package var durationS: Double { (samples.last?.tS ?? 0) - (samples.first?.tS ?? 0) }

    /// The longest script, first sample to last.
    package static let maximumSpanS = 1e9

    /// Parses CSV: `t,ax,ay,az,wx,wy,wz[,gesture]`, t in seconds, strictly
    /// increasing; a header line and `#` comments are allowed. A non-empty
    /// gesture column labels a gesture starting at that sample.
    package init(csv text: String, source: String) throws(MotionSamplesError) {
        samples = []
        labels = []
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = trimmed(rawLine)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(trimmed)
            if number == 0, Double(fields[0]) == nil { continue }  // header
            func fail(_ why: String) -> MotionSamplesError { MotionSamplesError(source: source, line: number + 1, message: why) }
            guard fields.count == 7 || fields.count == 8 else {
                throw fail("expected 7 or 8 comma-separated fields (t,ax,ay,az,wx,wy,wz[,gesture]), found \(fields.count)")
            }
            var numbers: [Double] = []
            for (i, field) in fields.prefix(7).enumerated() {
                guard let value = Double(field), value.isFinite else {
                    throw fail("field \(i + 1) (\(["t", "ax", "ay", "az", "wx", "wy", "wz"][i])) is not a finite number: \"\(field)\"")
                }
                numbers.append(value)
            }
            if let last = samples.last, numbers[0] <= last.tS { throw fail("t must increase from line to line") }
            // The script's span becomes Int64 ns (MotionTicks): a billion seconds (31 years) keeps it there.
            if let first = samples.first, !(numbers[0] - first.tS <= Self.maximumSpanS) {
                throw fail("t is \(numbers[0] - first.tS) s after the first sample's; a script spans at most \(Int(Self.maximumSpanS)) s")
            }
            samples.append(Sample(tS: numbers[0], values: Array(numbers[1...])))
            if fields.count == 8, !fields[7].isEmpty { labels.append(Label(atS: numbers[0] - samples[0].tS, gesture: fields[7])) }
        }
        guard samples.count >= 2 else { throw MotionSamplesError(source: source, line: nil, message: "needs at least two samples") }
    }

    /// The reading at `atS` seconds after the first sample, interpolated linearly.
    package func reading(atS offset: Double) -> MotionReading {
        let t = samples[0].tS + offset
        var upper = samples.firstIndex { $0.tS >= t } ?? samples.count - 1
        upper = max(upper, 1)
        let a = samples[upper - 1], b = samples[upper]
        let w = min(max((t - a.tS) / (b.tS - a.tS), 0), 1)
        let v = (0..<6).map { a.values[$0] + (b.values[$0] - a.values[$0]) * w }
        return MotionReading(userAcceleration: Vector3(v[0], v[1], v[2]), rotationRate: Vector3(v[3], v[4], v[5]))
    }
}

package struct MotionSamplesError: Error, CustomStringConvertible, Sendable {
    package var source: String
    package var line: Int?
    package var message: String
    package var description: String { line.map { "\(source): line \($0): \(message)" } ?? "\(source): \(message)" }
}

/// Without leading and trailing spaces, tabs and carriage returns (no Foundation here).
private func trimmed(_ text: Substring) -> String {
    let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
    guard let first = text.firstIndex(where: { !blank($0) }), let last = text.lastIndex(where: { !blank($0) }) else { return "" }
    return String(text[first...last])
}

/// The command line's short forms for impairments, netem-like:
/// `--delay normal:70.4:3.7`, `--loss gemodel:0.02:0.25:0.6:0.001`, `--rate 64kbit@20`.
package enum ImpairmentSpec {
    /// `MS`, `constant:MS`, `uniform:MIN:MAX`, `normal:MEAN:SD[:MIN:MAX]`, `pareto:SCALE:SHAPE`
    /// (`empirical:TRACE` is resolved by the caller, which reads the trace).
    package static func delay(_ text: String) -> Result<DelayDistribution, SpecError> {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        if parts.count == 1, let ms = Double(text) { return validated(.constant(ms: ms), text) }
        let numbers = parts.dropFirst().map { Double($0) }
        guard !numbers.contains(where: { $0 == nil }) else {
            return .failure(SpecError("\(text): the parameters must be numbers (ms)"))
        }
        let n = numbers.map { $0! }
        let distribution: DelayDistribution
        switch (parts[0], n.count) {
        case ("constant", 1): distribution = .constant(ms: n[0])
        case ("uniform", 2): distribution = .uniform(minMs: n[0], maxMs: n[1])
        case ("normal", 2): distribution = .normal(meanMs: n[0], sdMs: n[1])
        case ("normal", 4): distribution = .normal(meanMs: n[0], sdMs: n[1], minMs: n[2], maxMs: n[3])
        case ("pareto", 2): distribution = .pareto(scaleMs: n[0], shape: n[1])
        default:
            return .failure(SpecError("\(text): expected MS, constant:MS, uniform:MIN:MAX, normal:MEAN:SD[:MIN:MAX], pareto:SCALE:SHAPE or empirical:TRACE"))
        }
        return validated(distribution, text)
    }

    /// `P`, `P%`, `bernoulli:P`, or `gemodel:p:r:1-h:1-k` (netem's Gilbert–Elliott; percentages allowed).
    package static func loss(_ text: String) -> Result<LossModel, SpecError> {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let probabilities = (parts.count == 1 ? parts : Array(parts.dropFirst())).map(probability)
        guard !probabilities.contains(where: { $0 == nil }) else {
            return .failure(SpecError("\(text): probabilities are numbers from 0 to 1, or percentages such as 5%"))
        }
        let p = probabilities.map { $0! }
        let model: LossModel
        switch (parts.count == 1 ? "bernoulli" : parts[0], p.count) {
        case ("bernoulli", 1): model = .bernoulli(p: p[0])
        case ("gemodel", 4), ("gilbert-elliott", 4): model = .gilbertElliott(p: p[0], r: p[1], lossInBad: p[2], lossInGood: p[3])
        default: return .failure(SpecError("\(text): expected P, bernoulli:P or gemodel:p:r:1-h:1-k"))
        }
        if let problem = model.problem { return .failure(SpecError("\(text): \(problem)")) }
        return .success(model)
    }

    /// `RATE[@SECONDS]`, RATE a number of bit/s with an optional netem unit: bit, kbit, mbit, gbit.
    package static func rate(_ text: String) -> Result<RateStep, SpecError> {
        let halves = text.split(separator: "@", maxSplits: 1).map(String.init)
        var from: Double = 0
        if halves.count == 2 {
            guard let seconds = Double(halves[1]), seconds.isFinite, seconds >= 0, seconds <= RateStep.latestStartS else {
                return .failure(SpecError("\(text): the time after @ must be a number of seconds from 0 to \(Int(RateStep.latestStartS))"))
            }
            from = seconds
        }
        let rate = halves.first ?? ""
        let units: [(String, Double)] = [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1)]
        var multiplier: Double = 1
        var number = Substring(rate)
        for (unit, factor) in units where rate.lowercased().hasSuffix(unit) {
            multiplier = factor
            number = rate.dropLast(unit.count)
            break
        }
        guard let value = Double(number), value.isFinite, value > 0 else {
            return .failure(SpecError("\(text): expected a positive rate such as 64kbit or 2mbit, optionally @SECONDS"))
        }
        return .success(RateStep(fromNs: Int64(from * 1e9), bitsPerSecond: value * multiplier))
    }

    /// A probability written as 0.05 or 5%.
    package static func probability(_ text: String) -> Double? {
        let percent = text.hasSuffix("%")
        guard let value = Double(percent ? String(text.dropLast()) : text), value.isFinite else { return nil }
        let p = percent ? value / 100 : value
        return (0...1).contains(p) ? p : nil
    }

    private static func validated(_ distribution: DelayDistribution, _ text: String) -> Result<DelayDistribution, SpecError> {
        if let problem = distribution.problem { return .failure(SpecError("\(text): \(problem)")) }
        return .success(distribution)
    }
}

package struct SpecError: Error, CustomStringConvertible, Sendable {
    package var description: String
    package init(_ description: String) { self.description = description }
}

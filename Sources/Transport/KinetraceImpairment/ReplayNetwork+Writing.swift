import KinetraceJSON

extension ReplayNetwork {
    /// The network as a network-v1 document (specs/networks/README.md): what `parse` reads
    /// back to an equal value. Members at their defaults are left out; an empirical delay,
    /// which no file spells, is written as its quantile table at every sample's rank.
    package var document: JSONValue {
        var top: [String: JSONValue] = [
            "kinetrace_network": .integer(Self.formatVersion), "name": .string(name),
            "description": .string(description), "provenance": .string(provenance),
        ]
        if let basis { top["basis"] = .string(basis) }
        if let controllers { top["controllers"] = .integer(Int64(controllers)) }
        if let staggerNs { top["stagger_ms"] = .number(Double(staggerNs) / 1e6) }
        let i = impairments
        switch i.delay {
        case .none: break
        case .constant(let ms): top["delay"] = .object(["distribution": .string("constant"), "ms": .number(ms)])
        case .uniform(let lo, let hi):
            top["delay"] = .object(["distribution": .string("uniform"), "min_ms": .number(lo), "max_ms": .number(hi)])
        case .normal(let mean, let sd, let lo, let hi):
            var d: [String: JSONValue] = ["distribution": .string("normal"), "mean_ms": .number(mean), "sd_ms": .number(sd)]
            if lo != 0 { d["min_ms"] = .number(lo) }
            if hi.isFinite { d["max_ms"] = .number(hi) }
            top["delay"] = .object(d)
        case .pareto(let scale, let shape):
            top["delay"] = .object(["distribution": .string("pareto"), "scale_ms": .number(scale), "shape": .number(shape)])
        case .empirical(let sorted):
            let n = sorted.count
            let points = sorted.enumerated().map { k, ms in QuantilePoint(p: n == 1 ? 0 : Double(k) / Double(n - 1), ms: ms) }
            top["delay"] = Self.quantileDocument(points)
        case .quantiles(let points):
            top["delay"] = Self.quantileDocument(points)
        }
        top["preserve_order"] = .bool(!i.allowReordering)
        switch i.loss {
        case .none: break
        case .bernoulli(let p): top["loss"] = .object(["model": .string("bernoulli"), "p": .number(p)])
        case .gilbertElliott(let p, let r, let bad, let good):
            top["loss"] = .object(["model": .string("gilbert-elliott"), "p": .number(p), "r": .number(r),
                                   "1-h": .number(bad), "1-k": .number(good)])
        }
        if i.duplicate != 0 { top["duplicate"] = .number(i.duplicate) }
        if i.reorder != 0 { top["reorder"] = .number(i.reorder) }
        if i.corrupt != 0 { top["corrupt"] = .number(i.corrupt) }
        if i.corruptBits != 1 { top["corrupt_bits"] = .integer(Int64(i.corruptBits)) }
        if i.truncate != 0 { top["truncate"] = .number(i.truncate) }
        if !i.rate.isEmpty {
            top["rate"] = .array(i.rate.map { .object(["from_s": .number(Double($0.fromNs) / 1e9), "bits_per_s": .number($0.bitsPerSecond)]) })
        }
        return .object(top)
    }

    private static func quantileDocument(_ points: [QuantilePoint]) -> JSONValue {
        .object(["distribution": .string("quantiles"), "points": .array(points.map { .array([.number($0.p), .number($0.ms)]) })])
    }
}

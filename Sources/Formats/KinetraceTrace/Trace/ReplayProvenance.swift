import KinetraceJSON

/// How a replay's record was made (the header member "replay", TR-HEADER-9): what it
/// replayed, whose clock its sender stamps are on, and the network it went through with that
/// network's provenance, so an analysis of the record can say what its figures mean.
package struct ReplayProvenance: Hashable, Sendable {
    /// The trace or capture replayed, as the user named it.
    package var source: String
    /// The timestamp policy: `shift` and `original` keep the capture's sender clock,
    /// `wallclock` restamps each sample with its departure on this machine's clock.
    package var timestamps: String
    /// The network's name, or nil for a replay without one.
    package var network: String?
    /// What the network's numbers rest on: `measured`, `cited`, `assumed` or `none`.
    package var basis: String?
    /// The network's own account of where its numbers come from.
    package var provenance: String?

    package static let headerKey = "replay"
    package static let timestampPolicies = ["shift", "original", "wallclock"]
    package static let bases = ["measured", "cited", "assumed", "none"]

    package init(source: String, timestamps: String, network: String? = nil, basis: String? = nil, provenance: String? = nil) {
        self.source = source
        self.timestamps = timestamps
        self.network = network
        self.basis = basis
        self.provenance = provenance
    }

    /// Whether the record's sender stamps are on the recorder's own clock.
    package var stampsOnRecorderClock: Bool { timestamps == "wallclock" }

    package var json: JSONValue {
        var object: [String: JSONValue] = ["source": .string(source), "timestamps": .string(timestamps)]
        if let network { object["network"] = .string(network) }
        if let basis { object["basis"] = .string(basis) }
        if let provenance { object["provenance"] = .string(provenance) }
        return .object(object)
    }

    /// Read back from a header; nil when the member is absent or not this shape (a header's
    /// unknown members are kept, never trusted).
    package init?(json: JSONValue?) {
        guard let object = json?.objectValue, let source = object["source"]?.stringValue,
              let timestamps = object["timestamps"]?.stringValue, Self.timestampPolicies.contains(timestamps) else { return nil }
        let basis = object["basis"]?.stringValue
        guard basis == nil || Self.bases.contains(basis!) else { return nil }
        self.init(source: String(source.prefix(4096)), timestamps: timestamps,
                  network: object["network"]?.stringValue.map { String($0.prefix(256)) },
                  basis: basis,
                  provenance: object["provenance"]?.stringValue.map { String($0.prefix(8192)) })
    }

    /// The network as one line: its name, its basis, and the first sentence of its provenance.
    package var networkLine: String? {
        guard let network else { return nil }
        let first = provenance.map { text -> String in
            // The first sentence: up to the first ". ".
            var sentence = ""
            var previous: Character = " "
            for character in text {
                if previous == ".", character == " " { break }
                sentence.append(character)
                previous = character
            }
            return String(sentence.prefix(240))
        }
        return "network \(network) (\(basis ?? "basis not stated"))" + (first.map { ": \($0)" } ?? "")
    }
}

extension TraceHeader {
    /// How this trace was made by a replay, when it was.
    package var replay: ReplayProvenance? {
        get { ReplayProvenance(json: extra[ReplayProvenance.headerKey]) }
        set { extra[ReplayProvenance.headerKey] = newValue?.json }
    }
}

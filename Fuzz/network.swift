// Network profiles (Sources/Engines/KinetraceReplay/ReplayNetwork.swift and
// the impairment types it builds), over KinetraceJSON's value parser.
// Checks: a parsed network is usable (no `problem` in its impairments or delay
// or loss model, finite numbers, a stagger within the hour, controllers in
// range) and drawing decisions from it (seed 1, fixed so a finding replays)
// gives delays of at least 0 and bit flips and cuts inside the message;
// parsing is deterministic; an error names a line of the input.
import KinetraceImpairment

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNetwork(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: size > 0 ? data : nil, count: size))
    let lines = 1 + bytes.lazy.filter { $0 == 0x0A }.count
    do throws(ReplayNetworkError) {
        let network = try ReplayNetwork.parse(bytes, source: "fuzz")
        let i = network.impairments
        invariant(i.problem == nil, "a parsed network has a problem: \(i.problem!)")
        invariant(i.delay.problem == nil && i.loss.problem == nil, "a parsed network has a bad delay or loss model")
        invariant(!network.name.isEmpty, "a network without a name parsed")
        invariant((1...65_536).contains(network.controllers ?? 1), "controllers \(network.controllers!) parsed")
        invariant((0...ReplayNetwork.maximumStaggerNs).contains(network.staggerNs ?? 0), "stagger \(network.staggerNs!) ns parsed")
        for value in [i.duplicate, i.reorder, i.corrupt, i.truncate] {
            invariant(value.isFinite && (0...1).contains(value), "a probability of \(value) parsed")
        }
        var impairer = Impairer(i, seed: 1)
        for n in 0..<32 {
            let length = n % 5 == 0 ? 0 : n * 3
            let decision = impairer.decide(length: length, link: n % 3)
            invariant(decision.delayNs >= 0, "a delay of \(decision.delayNs) ns drawn")
            invariant(decision.flippedBits.allSatisfy { (0..<length * 8).contains($0) }, "a flipped bit outside \(length) bytes")
            invariant(decision.truncatedTo.map { (0..<length).contains($0) } ?? true, "a cut outside \(length) bytes")
        }
        let again = try? ReplayNetwork.parse(bytes, source: "fuzz")
        invariant(again == network, "parsing the same bytes twice gave different networks")
    } catch {
        invariant(error.line >= 1 && error.line <= lines, "error on line \(error.line) of \(lines): \(error)")
        invariant(!error.message.isEmpty, "an error without a message")
    }
    return 0
}

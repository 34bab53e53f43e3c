import Foundation
import PropertyBased
import Testing

/// Property checks on a pinned seed.
///
/// swift-property-based's `propertyCheck` draws a fresh random seed on every
/// run, and its `.fixedSeed` trait is for reproducing a failure (it runs one
/// input and always records an issue), so neither pins a run. These checks
/// draw every input from `KINETRACE_SEED` (a fixed default when unset), mixed
/// with the calling test's name so each property gets its own inputs, and
/// every issue a failing input records names the seed and the input.
package enum PropertySeed {
    package static let defaultSeed: UInt64 = 20_260_101

    /// The run's seed: `KINETRACE_SEED` (decimal or 0x-hex), else `defaultSeed`.
    package static let base: UInt64 = {
        guard let text = ProcessInfo.processInfo.environment["KINETRACE_SEED"], !text.isEmpty else { return defaultSeed }
        let parsed = text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
        guard let parsed else { fatalError("KINETRACE_SEED=\(text) is not an unsigned 64-bit integer") }
        return parsed
    }()

    /// The seed of one call site: the run's seed mixed with the test's name (FNV-1a), stable across line edits.
    static func stream(_ function: String, _ fileID: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(fileID) \(function)".utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return base ^ hash
    }

    /// Xoshiro's four words for iteration `index`, spread by SplitMix64 (a zero state is never produced).
    static func generator(_ stream: UInt64, _ index: Int) -> Xoshiro {
        var state = stream &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return Xoshiro(seed: (next(), next(), next(), next()))
    }
}

/// Runs `body` on `count` inputs drawn by `draw` from the pinned seed; stops at the
/// first input that records an issue, and adds the seed and the input to each such issue.
package func seededPropertyCheck<Input>(
    count: Int = 100,
    draw: (inout Xoshiro) -> Input,
    perform body: (Input) async throws -> Void,
    isolation: isolated (any Actor)? = #isolation,
    function: String = #function,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    let stream = PropertySeed.stream(function, sourceLocation.fileID)
    for index in 0..<count {
        var rng = PropertySeed.generator(stream, index)
        let input = draw(&rng)
        let note = Comment(rawValue: "property input \(index + 1) of \(count): \(String(describingForTest: input)); "
                                   + "KINETRACE_SEED=\(PropertySeed.base) reproduces it")
        let failures = IssueTally()
        // provideScope wants a @Sendable body; this one runs at once, on this task.
        nonisolated(unsafe) let run = body
        nonisolated(unsafe) let value = input
        let annotate = IssueHandlingTrait.compactMapIssues { issue in
            var annotated = issue
            annotated.comments.append(note)
            failures.add()
            return annotated
        }
        do {
            try await annotate.provideScope(for: Test.current!, testCase: Test.Case.current) { try await run(value) }
        } catch {
            Issue.record(error, note, sourceLocation: sourceLocation)
            return
        }
        if failures.count > 0 { return }
    }
}

package func seededPropertyCheck<A, SA>(
    count: Int = 100, input a: Generator<A, SA>, perform body: (A) async throws -> Void,
    isolation: isolated (any Actor)? = #isolation, function: String = #function, sourceLocation: SourceLocation = #_sourceLocation
) async {
    await seededPropertyCheck(count: count, draw: { a.run(using: &$0) }, perform: body, function: function, sourceLocation: sourceLocation)
}

package func seededPropertyCheck<A, SA, B, SB>(
    count: Int = 100, input a: Generator<A, SA>, _ b: Generator<B, SB>, perform body: (A, B) async throws -> Void,
    isolation: isolated (any Actor)? = #isolation, function: String = #function, sourceLocation: SourceLocation = #_sourceLocation
) async {
    await seededPropertyCheck(count: count, draw: { (a.run(using: &$0), b.run(using: &$0)) }, perform: { try await body($0.0, $0.1) },
                              function: function, sourceLocation: sourceLocation)
}

package func seededPropertyCheck<A, SA, B, SB, C, SC>(
    count: Int = 100, input a: Generator<A, SA>, _ b: Generator<B, SB>, _ c: Generator<C, SC>, perform body: (A, B, C) async throws -> Void,
    isolation: isolated (any Actor)? = #isolation, function: String = #function, sourceLocation: SourceLocation = #_sourceLocation
) async {
    await seededPropertyCheck(count: count, draw: { (a.run(using: &$0), b.run(using: &$0), c.run(using: &$0)) },
                              perform: { try await body($0.0, $0.1, $0.2) }, function: function, sourceLocation: sourceLocation)
}

package func seededPropertyCheck<A, SA, B, SB, C, SC, D, SD>(
    count: Int = 100, input a: Generator<A, SA>, _ b: Generator<B, SB>, _ c: Generator<C, SC>, _ d: Generator<D, SD>,
    perform body: (A, B, C, D) async throws -> Void,
    isolation: isolated (any Actor)? = #isolation, function: String = #function, sourceLocation: SourceLocation = #_sourceLocation
) async {
    await seededPropertyCheck(count: count, draw: { (a.run(using: &$0), b.run(using: &$0), c.run(using: &$0), d.run(using: &$0)) },
                              perform: { try await body($0.0, $0.1, $0.2, $0.3) }, function: function, sourceLocation: sourceLocation)
}

/// Counts issues recorded from whichever thread the test's body records them on.
final class IssueTally: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func add() { lock.withLock { value += 1 } }
    var count: Int { lock.withLock { value } }
}

import Testing
import KinetraceTestSupport
@testable import KinetraceTrace
import KinetraceWire

/// The trace fuzz target's seeds and saved crashes (Fuzz/corpus/trace,
/// Fuzz/regressions/trace), read the way the target reads them: the whole
/// input through `TraceReader(bytes:)`, then every line after the header
/// through the fast path and the general parser, which must agree wherever
/// the fast path accepts. `ok-…` files must read to the end with records;
/// `<code>-…` files must fail with that `TraceError` code.
@Suite struct FuzzCorpusTests {
    /// One line through `TraceDecoder.record` (fast path first) or only the general parser.
    /// nil when the line does not parse; `.some(nil)` for a record kind the reader skips.
    static func decode(_ line: [UInt8], _ wireProtocol: any WireProtocol.Type, general: Bool) -> TraceRecord?? {
        var decoder = TraceDecoder(wireProtocol)
        return line.withUnsafeBytes { raw in
            do throws(TraceDecoder.Failure) {
                return .some(general ? try decoder.generalRecord(raw) : try decoder.record(raw))
            } catch {
                return nil
            }
        }
    }

    @Test func traceInputs() throws {
        let inputs = try FuzzInput.all("trace")
        #expect(inputs.count >= 5)
        var fastPathAccepted = 0
        for input in inputs {
            var wireProtocol: any WireProtocol.Type = MotionLinkV1.self
            var outcome: Result<Int, TraceError>
            do throws(TraceError) {
                let reader = try TraceReader(bytes: input.bytes, name: input.path)
                wireProtocol = reader.wireProtocol
                var records = 0
                while let record = try reader.next() {
                    records += 1
                    var line = TraceEncoder.line(for: record, as: wireProtocol)
                    line.removeLast()
                    let again = Self.decode(line, wireProtocol, general: false)
                    #expect(again == .some(.some(record)), "\(input): record \(records) changed through encode→decode")
                }
                outcome = .success(records)
            } catch {
                outcome = .failure(error)
            }
            switch (input.expectation, outcome) {
            case (.value, .success(let records)): #expect(records > 0, "\(input): no records")
            case (.value, .failure(let error)): Issue.record("\(input): expected records, got \(error)")
            case (.error(let code), .success): Issue.record("\(input): expected \(code), read to the end")
            case (.error(let code), .failure(let error)): #expect(error.code.name == code, "\(input): \(error)")
            default: break
            }
            let lines = input.bytes.split(separator: 0x0A, omittingEmptySubsequences: false).dropFirst()
            for line in lines {
                var fast = TraceDecoder(wireProtocol)
                guard let message = Array(line).withUnsafeBytes({ fast.canonicalMessage($0) }) else { continue }
                fastPathAccepted += 1
                #expect(Self.decode(Array(line), wireProtocol, general: true) == .some(.some(.message(message))), "\(input): the two paths disagree")
            }
        }
        // The seeds are what the writer writes, so the fast path must engage on them.
        #expect(fastPathAccepted > 10)
    }
}

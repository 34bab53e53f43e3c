import KinetraceTestSupport
import Testing
import KinetraceImpairment
import KinetraceReplay

/// The network fuzz target's seeds and saved crashes (Fuzz/corpus/network,
/// Fuzz/regressions/network), parsed as the target parses them. `ok-…` files
/// must parse to a usable network; `<code>-…` files must be rejected, with
/// an error naming a line of the file (networks have no error codes, so the
/// name says only that it fails).
@Suite struct FuzzCorpusTests {
    @Test func networks() throws {
        let inputs = try FuzzInput.all("network")
        #expect(inputs.count >= 4)
        for input in inputs {
            let lines = 1 + input.bytes.filter { $0 == 0x0A }.count
            do throws(ReplayNetworkError) {
                let network = try ReplayNetwork.parse(input.bytes, source: input.path)
                #expect(network.impairments.problem == nil, "\(input)")
                var impairer = Impairer(network.impairments, seed: 1)
                for n in 0..<32 { #expect(impairer.decide(length: n * 3, link: n % 3).delayNs >= 0, "\(input)") }
                if case .error = input.expectation { Issue.record("\(input): expected an error, parsed") }
            } catch {
                #expect((1...lines).contains(error.line), "\(input): \(error)")
                if input.expectation == .value { Issue.record("\(input): \(error)") }
            }
        }
    }

    /// The shard target's inputs: the first line is the --shard text, the rest NAME=VALUE.
    /// `ok-…` parse to a shard in range, `refused-…` are one-line errors.
    @Test func shards() throws {
        let inputs = try FuzzInput.all("shard")
        #expect(inputs.count >= 6)
        for input in inputs {
            let lines = String(decoding: input.bytes, as: UTF8.self).split(separator: "\n").map(String.init)
            var environment: [String: String] = [:]
            for line in lines.dropFirst() {
                if let equals = line.firstIndex(of: "=") { environment[String(line[..<equals])] = String(line[line.index(after: equals)...]) }
            }
            switch ReplayShard.parse(lines.first ?? "", environment: environment) {
            case .success(let shard):
                #expect((0..<shard.count).contains(shard.index), "\(input)")
                if case .error = input.expectation { Issue.record("\(input): expected an error, parsed \(shard)") }
            case .failure(let error):
                #expect(!error.description.isEmpty && !error.description.contains("\n"), "\(input)")
                if input.expectation == .value { Issue.record("\(input): \(error)") }
            }
        }
    }
}

import Foundation
import KinetraceSupport
import KinetraceTestSupport
import KinetraceWire
import Testing

/// The phone page's sample template (`SampleTemplate`), filled in Swift the way the page's
/// script fills it, against the protocol's own `sample(_:timeMs:)`: the same bytes for binary
/// and OSC kinds, the same facts for JSON and text (whose number spelling may differ), for
/// every built-in and example protocol and for the declarations in Tests/Browser/protocols (every
/// check, both byte orders, a length prefix at an offset, a text line with a clock in seconds
/// and an own vector), which the browser test streams too.
@Suite struct SampleTemplateTests {
    static func file(_ path: String) throws -> DeclaredProtocol {
        let full = Fixture.packageRoot.appendingPathComponent(path).path
        return try DeclaredProtocol.read(Array(try Data(contentsOf: URL(fileURLWithPath: full))), path: full)
    }

    static func declared(_ text: String) throws -> DeclaredProtocol { try DeclaredProtocol.read(Array(text.utf8), path: "t.json") }

    static func readings(_ count: Int) -> [MotionReading] {
        var generator = SeededGenerator(seed: 20261127)
        func v() -> Vector3 { Vector3(generator.unit() * 2 - 1, generator.unit() * 2 - 1, generator.unit() * 2 - 1) }
        return (0..<count).map { _ in MotionReading(userAcceleration: v(), rotationRate: v(), gravity: v(), attitude: v()) }
    }

    static let cases: [String] = ["motionlink-v1", "keepcalm-json", "attitude-stream", "examples/protocols/osc-motion.json",
                                  "examples/protocols/ndjson-motion.json", "checked", "text"]

    static func wireProtocol(_ name: String) throws -> any WireProtocol {
        switch name {
        case "checked": return try file("Tests/Browser/protocols/checked-binary.json")
        case "text": return try file("Tests/Browser/protocols/line-text.json")
        case let path where path.hasSuffix(".json"): return try file(path)
        default: return try #require(ProtocolRegistry.standard.named(name))
        }
    }

    @Test(arguments: cases) func aFilledTemplateIsTheProtocolsOwnSample(_ name: String) throws {
        let wireProtocol = try Self.wireProtocol(name)
        let template = try SampleTemplate(wireProtocol)
        #expect(!template.slots.isEmpty)
        var timeMs: UInt64 = 1_795_750_000_123
        for reading in Self.readings(200) {
            timeMs += 17
            let filled = template.filled(reading, timeMs: timeMs)
            let own = try #require(wireProtocol.sample(reading, timeMs: timeMs))
            let a = wireProtocol.facts(filled), b = wireProtocol.facts(own)
            #expect(a.isValid && b.isValid, "\(name): \(a.error.map { "\($0)" } ?? "") \(String(decoding: filled, as: UTF8.self))")
            #expect(a.senderTimeMs == b.senderTimeMs && a.motion == b.motion, "\(name)")
            if !template.isText, template.slots.allSatisfy({ if case .messageID = $0.content { return false } else { return true } }) {
                #expect(filled == own, "\(name): \(Hex.encode(filled)) != \(Hex.encode(own))")
            }
        }
    }

    @Test func aProtocolWithoutMotionHasNoTemplate() throws {
        let p = try Self.declared("""
            {"kinetrace_protocol":1,"name":"clock","version":"1","summary":"s","rate_hz":1,"transport":{"kind":"udp","default_port":9},
             "sender_clock":{"unit":"ms","epoch":"unix"},
             "messages":[{"kind":"m","direction":"controller_to_host","encoding":"binary","byte_order":"little","fields":[{"name":"t","type":"u64","role":"sender_time"}]}]}
            """)
        #expect(throws: SampleTemplate.Unsupported.self) { try SampleTemplate(p) }
    }

    /// What the page's script reads: every slot placed, checks and framing spelled out.
    @Test func theTemplatesJSONSaysWhereEverySlotGoes() throws {
        let json = try SampleTemplate(try Self.wireProtocol("checked")).json.jsonText
        #expect(json.contains("\"framing\":{\"big_endian\":true,\"counts_itself\":false,\"kind\":\"length_prefix\",\"offset\":1,\"width\":2}"), "\(json)")
        #expect(json.contains("\"algorithm\":\"crc16_ccitt\""))
        #expect(json.contains("\"role\":\"sender_time\"") && json.contains("\"unit\":\"us\""))
        let text = try SampleTemplate(try Self.wireProtocol("text"))
        #expect(text.isText && text.ownSumOf == [.userAcceleration, .rotationRate])
        guard case .text(let pieces) = text.layout else { Issue.record("a text layout"); return }
        #expect(pieces == ["M;", ";", ";", ""], "\(pieces)")
    }
}

import Foundation
import KinetraceTestSupport
import KinetraceWire
import Testing

/// Each compiled protocol carries its declaration (the derived conformance cases are made from it):
/// the built-in text is specs/protocols/NAME.json byte for byte, and it reads to the digest the
/// compiled codec names. After editing a spec, scripts/embed-declarations brings the two back together.
struct DeclarationTextTests {
    static func check<P: CompiledWireProtocol>(_ type: P.Type) throws {
        let file = Fixture.packageRoot.appendingPathComponent("specs/protocols/\(P.id).json")
        let spec = try String(contentsOf: file, encoding: .utf8)
        let text = try #require(P.declarationText, "\(P.id) carries no declaration")
        #expect(text + "\n" == spec, "\(P.id): the built-in declaration differs from specs/protocols/\(P.id).json; run scripts/embed-declarations")
        let declared = try #require(P.builtInDeclaration, "\(P.id): the built-in declaration does not read")
        #expect(declared.declared.digest == P.declarationDigest)
        #expect(declared.declared.name == P.id.name)
    }

    @Test func theBuiltInDeclarationsAreTheSpecs() throws {
        try Self.check(MotionLinkV1.self)
        try Self.check(KeepCalmJSON.self)
        try Self.check(AttitudeStream.self)
    }
}

import Foundation
import Testing

/// The MotionLink filter tools/wireshark/README.md recommends for invalid
/// messages. A bare boolean field in a Wireshark 4 display filter tests
/// whether the field is present, not whether it is true, and every message
/// carries `motionlink.valid`: `!motionlink.valid` matches nothing.
@Suite(.enabled(if: TShark.requirement.runs, "needs tshark and text2pcap (Debian package tshark); with CI set this fails instead"))
struct MotionLinkFilterTests {
    @Test func documentedFilters() throws {
        var tshark = try TShark()
        let file = try tshark.capture([.toHost(SpecVectors.frameTrigger), .toHost(SpecVectors.frameCorrupt),
                                       .toHost(SpecVectors.frameShort), .toController(SpecVectors.ackTrigger),
                                       .toHost(SpecVectors.frameNaN)])
        func numbers(_ filter: String) throws -> [String] {
            try tshark.decode(file, extra: ["-Y", filter]).map { $0["frame.number"] ?? "" }
        }
        #expect(try numbers("motionlink.valid == 0") == ["2", "3", "5"])
        #expect(try numbers("motionlink.valid == False") == ["2", "3", "5"])
        #expect(try numbers("motionlink && !motionlink.valid") == [])
        // The README's other filters.
        #expect(try numbers("motionlink.check.status == 0") == ["2"])
        #expect(try numbers(#"motionlink.check.status == "Bad""#) == ["2"])
        #expect(try numbers(#"motionlink.reason == "non_finite""#) == ["5"])
        #expect(try numbers("motionlink.trigger == 1") == ["1"])
        #expect(try numbers(#"motionlink.kind == "ack""#) == ["4"])
    }
}

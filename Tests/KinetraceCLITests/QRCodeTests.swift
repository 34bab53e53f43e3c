import KinetraceQR
import Testing

/// The QR code `kinetrace phone` prints: libqrencode's modules, drawn in half blocks with the
/// quiet zone a reader needs.
@Suite struct QRCodeTests {
    /// A finder pattern at (row, column): a dark 7×7 ring, a light ring, a dark 3×3 centre.
    static func finder(_ code: QRCode, _ row: Int, _ column: Int) -> Bool {
        (0..<7).allSatisfy { r in
            (0..<7).allSatisfy { c in
                let ring = r == 0 || r == 6 || c == 0 || c == 6, centre = (2...4).contains(r) && (2...4).contains(c)
                return code.isDark(row: row + r, column: column + c) == (ring || centre)
            }
        }
    }

    @Test func aPageAddressMakesAReadableCode() throws {
        let code = try QRCode("https://192.168.178.20:47443/")
        #expect(code.width == 17 + 4 * code.version && (1...10).contains(code.version))
        #expect(Self.finder(code, 0, 0) && Self.finder(code, 0, code.width - 7) && Self.finder(code, code.width - 7, 0))
        #expect(!Self.finder(code, code.width - 7, code.width - 7), "only three corners hold finders")
        // Timing pattern: row 6 alternates between the finders.
        #expect((8..<(code.width - 8)).allSatisfy { code.isDark(row: 6, column: $0) == ($0 % 2 == 0) })
    }

    @Test func theTerminalTextHasAQuietZoneAndTwoRowsALine() throws {
        let code = try QRCode("https://[fe80::1]:47443/")
        let lines = code.terminalText().split(separator: "\n", omittingEmptySubsequences: false)
        let side = code.width + 8
        #expect(lines.count == (side + 1) / 2 && lines.allSatisfy { $0.count == side })
        // Light on dark: the quiet zone is drawn, the top-left finder's dark ring is not.
        #expect(lines[0].allSatisfy { $0 == "█" } && lines[1].allSatisfy { $0 == "█" })
        // Line 2 holds rows 4 and 5: the quiet zone's last column drawn, then the finder's dark edge left blank.
        #expect(Array(lines[2])[3] == "█" && Array(lines[2])[4] == " ")
        #expect(try QRCode("x").terminalText(inverted: true).split(separator: "\n")[0].allSatisfy { $0 == " " })
    }

    @Test func emptyTooLongAndNULTextsAreRefused() {
        #expect(throws: QRCode.Failure.self) { try QRCode("") }
        #expect(throws: QRCode.Failure.self) { try QRCode(String(repeating: "a", count: 3000)) }
        #expect(throws: QRCode.Failure.self) { try QRCode("a\u{0}b") }
    }
}

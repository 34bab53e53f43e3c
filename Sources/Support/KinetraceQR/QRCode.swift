import CQRencode

/// A QR code made by libqrencode: its modules, dark or light, row by row.
package struct QRCode: Sendable, Equatable {
    /// Modules per side (21 for version 1, 4 more per version).
    package let width: Int
    package let version: Int
    /// `width × width` modules, row-major; true is dark.
    package let modules: [Bool]

    /// Why a text has no QR code.
    package struct Failure: Error, CustomStringConvertible, Equatable {
        package var description: String
    }

    /// The smallest code for `text` at error correction level M (15 % of it can be lost).
    package init(_ text: String) throws(Failure) {
        guard !text.isEmpty, text.utf8.count <= 2048 else { throw Failure(description: "a QR code here holds 1 to 2048 bytes, not \(text.utf8.count)") }
        guard !text.utf8.contains(0) else { throw Failure(description: "a QR code's text has no NUL byte") }
        guard let code = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M) else {
            throw Failure(description: "libqrencode could not encode \(text.utf8.count) bytes")
        }
        defer { QRcode_free(code) }
        width = Int(code.pointee.width)
        version = Int(code.pointee.version)
        // Bit 0 of each byte is the module's colour; the other bits say what libqrencode used it for.
        modules = (0..<(width * width)).map { code.pointee.data[$0] & 1 == 1 }
    }

    package func isDark(row: Int, column: Int) -> Bool {
        guard (0..<width).contains(row), (0..<width).contains(column) else { return false }
        return modules[row * width + column]
    }

    /// The code as terminal text: two rows of modules per line in half blocks, with the
    /// four-module quiet zone readers need, drawn light on dark as a terminal shows it best.
    /// `inverted` draws dark modules as the terminal's foreground instead.
    package func terminalText(inverted: Bool = false) -> String {
        let quiet = 4, side = width + 2 * quiet
        func dark(_ row: Int, _ column: Int) -> Bool {
            let value = isDark(row: row - quiet, column: column - quiet)
            return inverted ? value : !value
        }
        var lines: [String] = []
        for row in stride(from: 0, to: side, by: 2) {
            var line = ""
            for column in 0..<side {
                switch (dark(row, column), row + 1 < side && dark(row + 1, column)) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}

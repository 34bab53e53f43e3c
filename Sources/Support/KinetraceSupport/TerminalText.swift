/// Text that came from input (a trace, a capture, a peer), made safe to print to a terminal
/// or into a one-line message: control characters show as escapes instead of acting, so a
/// trace cannot clear the screen, set the window title, move the cursor, or start a second
/// line that passes for the tool's own.
package enum TerminalText {
    /// `text` with C0 and C1 control characters, DEL and the bidirectional overrides written
    /// as `\n`, `\r`, `\t`, `\e` or `\u{XX}`; everything else is kept.
    package static func escaped(_ text: some StringProtocol) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return String(text) }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else { out.unicodeScalars.append(scalar); continue }
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{1B}": out += "\\e"
            default: out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return out
    }

    /// C0 controls, DEL, C1 controls (0x9B is CSI to some terminals), and the bidirectional
    /// embeddings, overrides and isolates, which can make text read in another order than it is.
    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}

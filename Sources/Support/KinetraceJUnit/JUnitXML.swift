/// The text rules of the JUnit writer: escaping, times and timestamps.
package enum JUnitXML {
    /// What stands in for a character XML 1.0 cannot carry (a C0 control other than
    /// tab, LF and CR; U+FFFE; U+FFFF), so the reader sees that something was there.
    package static let replacement: Unicode.Scalar = "\u{FFFD}"

    /// `text` safe in XML 1.0 content, or in a double- or single-quoted attribute value
    /// with `inAttribute`. Works on Unicode scalars, not Characters: a combining mark
    /// after a quote makes one Character that no longer equals the quote.
    package static func escaped(_ text: String, inAttribute: Bool = false) -> String {
        var out = String.UnicodeScalarView()
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out.append(contentsOf: "&amp;".unicodeScalars)
            case "<": out.append(contentsOf: "&lt;".unicodeScalars)
            case ">": out.append(contentsOf: "&gt;".unicodeScalars)  // also keeps "]]>" out of text
            case "\"": out.append(contentsOf: "&quot;".unicodeScalars)
            case "'": out.append(contentsOf: "&apos;".unicodeScalars)
            // A reader turns a literal CR into LF, and in attributes tab and LF into spaces.
            case "\r": out.append(contentsOf: "&#13;".unicodeScalars)
            case "\t" where inAttribute: out.append(contentsOf: "&#9;".unicodeScalars)
            case "\n" where inAttribute: out.append(contentsOf: "&#10;".unicodeScalars)
            case "\t", "\n": out.append(scalar)
            default: out.append(isAllowed(scalar) ? scalar : replacement)
            }
        }
        return String(out)
    }

    /// XML 1.0's Char production: tab, LF, CR, U+0020–U+D7FF, U+E000–U+FFFD and
    /// above U+FFFF (a Swift scalar is never a surrogate).
    package static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x9, 0xA, 0xD: return true
        case 0..<0x20, 0xFFFE, 0xFFFF: return false
        default: return true
        }
    }

    /// Nanoseconds as decimal seconds with three places, "0.074": Surefire's time pattern,
    /// which Jenkins' junit-10.xsd enforces, allows at most three (checked against it:
    /// six places fail there). Never an exponent; rounded to the nearest millisecond; a
    /// negative duration is 0.
    package static func seconds(ns: Int64) -> String {
        let ns = max(ns, 0)
        let millis = ns / 1_000_000 + (ns % 1_000_000 >= 500_000 ? 1 : 0)
        let fraction = String(millis % 1_000)
        return "\(millis / 1_000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}

/// The text rules of the JUnit writer: escaping, times and timestamps.
public enum JUnitXML {
    /// What stands in for a character XML 1.0 cannot carry (a C0 control other than
    /// tab, LF and CR; U+FFFE; U+FFFF), so the reader sees that something was there.
    public static let replacement: Unicode.Scalar = "\u{FFFD}"

    /// `text` safe in XML 1.0 content, or in a double- or single-quoted attribute value
    /// with `inAttribute`. Works on Unicode scalars, not Characters: a combining mark
    /// after a quote makes one Character that no longer equals the quote.
    public static func escaped(_ text: String, inAttribute: Bool = false) -> String {
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
    public static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x9, 0xA, 0xD: return true
        case 0..<0x20, 0xFFFE, 0xFFFF: return false
        default: return true
        }
    }

    /// Nanoseconds as decimal seconds with six places, "0.000074": Surefire's pattern,
    /// never an exponent. Rounded to the nearest microsecond; a negative duration is 0.
    public static func seconds(ns: Int64) -> String {
        let ns = max(ns, 0)
        let micros = ns / 1_000 + (ns % 1_000 >= 500 ? 1 : 0)
        let fraction = String(micros % 1_000_000)
        return "\(micros / 1_000_000)." + String(repeating: "0", count: 6 - fraction.count) + fraction
    }

    /// Nanoseconds since the Unix epoch as an ISO 8601 date and time in UTC, to the
    /// second and without a zone ("2026-11-24T18:07:19"), as Ant and Surefire write it.
    public static func timestamp(epochNs: Int64) -> String {
        let seconds = floorDivide(epochNs, 1_000_000_000)
        let days = floorDivide(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        // Days to a proleptic Gregorian date (Howard Hinnant's civil_from_days).
        let z = days + 719_468
        let era = floorDivide(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return "\(digits(year, 4))-\(digits(month, 2))-\(digits(day, 2))T"
            + "\(digits(secondOfDay / 3_600, 2)):\(digits(secondOfDay / 60 % 60, 2)):\(digits(secondOfDay % 60, 2))"
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    private static func digits(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}

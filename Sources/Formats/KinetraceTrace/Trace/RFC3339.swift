/// UTC timestamps as RFC 3339 text, e.g. `2026-11-23T07:47:05.123Z`,
/// computed from the civil calendar so the format layer needs no Foundation.
package enum RFC3339 {
    package static func string(fromNanoseconds ns: Int64) -> String {
        // Floor division written so that Int64.min cannot overflow.
        var seconds = ns / 1_000_000_000
        var nanos = ns % 1_000_000_000
        if nanos < 0 { seconds -= 1; nanos += 1_000_000_000 }
        let millis = nanos / 1_000_000
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 { days -= 1; secondOfDay += 86_400 }
        // Days since 1970-01-01 to a proleptic Gregorian date, counting 400-year eras from 0000-03-01.
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ v: Int64, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(millis, 3))Z"
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (a space or `t` may stand for
    /// the `T`, `z` for the `Z`, as RFC 3339 §5.6 allows) into ns since the UNIX epoch.
    /// nil for anything else, a field out of range, or an instant outside 1970–2116
    /// (the range a trace holds). Leap seconds (`:60`) are refused: CLOCK_REALTIME has none.
    package static func nanoseconds(from text: String) -> Int64? {
        let b = Array(text.utf8)
        var i = 0
        func digits(_ n: Int) -> Int64? {
            guard i + n <= b.count else { return nil }
            var v: Int64 = 0
            for k in i..<(i + n) {
                guard (48...57).contains(b[k]) else { return nil }
                v = v * 10 + Int64(b[k] - 48)
            }
            i += n
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < b.count, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(0x2D), let month = digits(2), expect(0x2D), let day = digits(2) else { return nil }
        guard i < b.count, [0x54, 0x74, 0x20].contains(b[i]) else { return nil }
        i += 1
        guard let hour = digits(2), expect(0x3A), let minute = digits(2), expect(0x3A), let second = digits(2) else { return nil }
        var nanos: Int64 = 0
        if expect(0x2E) {
            var places = 0
            while i < b.count, (48...57).contains(b[i]) {
                if places < 9 { nanos = nanos * 10 + Int64(b[i] - 48) }
                places += 1
                i += 1
            }
            guard places > 0 else { return nil }
            for _ in places..<max(places, 9) { nanos *= 10 }
        }
        var offsetSeconds: Int64 = 0
        if expect(0x5A) || expect(0x7A) {
        } else if i < b.count, b[i] == 0x2B || b[i] == 0x2D {
            let sign: Int64 = b[i] == 0x2D ? -1 : 1
            i += 1
            guard let oh = digits(2), expect(0x3A), let om = digits(2), oh <= 23, om <= 59 else { return nil }
            offsetSeconds = sign * (oh * 3600 + om * 60)
        } else {
            return nil
        }
        guard i == b.count, (1970...2116).contains(year), (1...12).contains(month), hour <= 23, minute <= 59, second <= 59 else { return nil }
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let monthDays: [Int64] = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...monthDays[Int(month - 1)]).contains(day) else { return nil }
        // Days from civil (the inverse of `string`'s conversion).
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yearOfEra = y - era * 400
        let mp = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * mp + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        let ns = seconds * 1_000_000_000 + nanos
        return TraceRecord.timeRangeNs.contains(ns) ? ns : nil
    }
}

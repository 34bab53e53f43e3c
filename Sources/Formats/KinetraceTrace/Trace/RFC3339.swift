/// UTC timestamps as RFC 3339 text, e.g. `2026-11-23T07:47:05.123Z`,
/// computed from the civil calendar so the format layer needs no Foundation.
public enum RFC3339 {
    public static func string(fromNanoseconds ns: Int64) -> String {
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
}

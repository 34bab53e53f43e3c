import KinetraceTestSupport
import PropertyBased
import Testing
@testable import KinetraceTrace

/// Endpoint text (`a.b.c.d:port`, `[v6]:port`) and RFC 3339 timestamps.
@Suite struct EndpointAndTimeTests {
    static let valid: [(String, String, UInt16)] = [
        ("127.0.0.1:47110", "127.0.0.1", 47110),
        ("0.0.0.0:0", "0.0.0.0", 0),
        ("255.255.255.255:65535", "255.255.255.255", 65535),
        ("10.0.0.11:50001", "10.0.0.11", 50001),
        ("[::1]:47110", "::1", 47110),
        ("[::]:1", "::", 1),
        ("[fe80::1%eth0]:5", "fe80::1%eth0", 5),
        ("[2001:db8::1]:0", "2001:db8::1", 0),
        ("[::ffff:10.0.0.1]:80", "::ffff:10.0.0.1", 80),
        ("[2001:0db8:85a3:0000:0000:8a2e:0370:7334]:65535", "2001:0db8:85a3:0000:0000:8a2e:0370:7334", 65535),
    ]

    @Test(arguments: valid)
    func parsesAndDescribesBackToTheSameText(_ text: String, _ host: String, _ port: UInt16) throws {
        let endpoint = try #require(Endpoint(text))
        #expect(endpoint.host == host)
        #expect(endpoint.port == port)
        #expect(endpoint.isIPv6 == text.hasPrefix("["))
        #expect(endpoint.description == text)
        #expect(Endpoint(endpoint.description) == endpoint)
        // From a Substring too.
        #expect(Endpoint(("x" + text).dropFirst()) == endpoint)
    }

    static let malformed = [
        "", "1.2.3.4", "1.2.3.4:", ":80", ":", "1.2.3.4:65536", "1.2.3.4:70000", "1.2.3.4:99999", "1.2.3.4:123456",
        "1.2.3.4:-1", "1.2.3.4:+80", "1.2.3.4: 80", "1.2.3.4:80 ", "1.2.3.4:8o", "1.2.3.4:0x50", "1.2.3.4:80:90",
        "::1:80", "fe80::1:5", "::1", "[::1]47110", "[::1]", "[::1]:", "[]:80", "[::1:80", "[::1]:65536", "[::1]:8a",
        "[::1]::80", "[::1]:80]", "::1]:80",
    ]

    @Test(arguments: malformed)
    func rejectsMalformedEndpoints(_ text: String) {
        #expect(Endpoint(text) == nil, "\(text) parsed as \(String(describing: Endpoint(text)))")
    }

    @Test func randomEndpointsRoundTripThroughTheirDescription() async {
        await seededPropertyCheck(count: 1000, input: Gen.uint64()) { seed in
            var rng = SplitMix64(seed: seed)
            let endpoint = RandomTrace.endpoint(&rng)
            #expect(Endpoint(endpoint.description) == endpoint, "\(endpoint)")
        }
    }

    @Test func ordersByHostThenPort() {
        let a = Endpoint(host: "10.0.0.1", port: 9), b = Endpoint(host: "10.0.0.1", port: 10), c = Endpoint(host: "10.0.0.2", port: 1)
        #expect(a < b && b < c && a < c)
        #expect(!(b < a))
        #expect([c, b, a].sorted() == [a, b, c])
    }

    // MARK: RFC 3339

    static let instants: [(Int64, String)] = [
        (0, "1970-01-01T00:00:00.000Z"),
        (1, "1970-01-01T00:00:00.000Z"),
        (999_999, "1970-01-01T00:00:00.000Z"),
        (1_000_000, "1970-01-01T00:00:00.001Z"),
        (1_767_225_600_000_000_000, "2026-01-01T00:00:00.000Z"),
        (1_767_225_599_999_999_999, "2025-12-31T23:59:59.999Z"),
        (1_709_164_800_000_000_000, "2024-02-29T00:00:00.000Z"),
        (1_709_212_455_123_456_789, "2024-02-29T13:14:15.123Z"),
        (1_709_251_200_000_000_000, "2024-03-01T00:00:00.000Z"),
        (951_782_400_000_000_000, "2000-02-29T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (-999_999, "1969-12-31T23:59:59.999Z"),
        (-1_000_000, "1969-12-31T23:59:59.999Z"),
        (-1_000_001, "1969-12-31T23:59:59.998Z"),
        (-1_000_000_000, "1969-12-31T23:59:59.000Z"),
        (-86_400_000_000_000, "1969-12-31T00:00:00.000Z"),
        (-86_400_000_000_001, "1969-12-30T23:59:59.999Z"),
        (-2_203_891_200_000_000_000, "1900-03-01T00:00:00.000Z"),
        (-2_203_891_201_000_000_000, "1900-02-28T23:59:59.000Z"),
        (Int64.max, "2262-04-11T23:47:16.854Z"),
        (Int64.min + 999_999_999, "1677-09-21T00:12:44.145Z"),
    ]

    @Test(arguments: instants)
    func formatsInstants(_ ns: Int64, _ text: String) {
        #expect(RFC3339.string(fromNanoseconds: ns) == text)
    }

    /// A slow, obviously-right reference: walk years and months from 1970.
    static func reference(_ ns: Int64) -> String {
        var seconds = ns / 1_000_000_000
        var sub = ns % 1_000_000_000
        if sub < 0 { sub += 1_000_000_000; seconds -= 1 }
        var days = seconds / 86_400
        var sod = seconds % 86_400
        if sod < 0 { sod += 86_400; days -= 1 }
        func leap(_ y: Int64) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }
        var year: Int64 = 1970
        while days < 0 { year -= 1; days += leap(year) ? 366 : 365 }
        while days >= (leap(year) ? 366 : 365) { days -= leap(year) ? 366 : 365; year += 1 }
        var lengths: [Int64] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        if leap(year) { lengths[1] = 29 }
        var month = 0
        while days >= lengths[month] { days -= lengths[month]; month += 1 }
        func pad(_ v: Int64, _ w: Int) -> String { String(repeating: "0", count: max(0, w - String(v).count)) + String(v) }
        return "\(pad(year, 4))-\(pad(Int64(month + 1), 2))-\(pad(days + 1, 2))T\(pad(sod / 3600, 2)):\(pad(sod / 60 % 60, 2)):\(pad(sod % 60, 2)).\(pad(sub / 1_000_000, 3))Z"
    }

    @Test func agreesWithACalendarWalkOnRandomInstants() async {
        await seededPropertyCheck(count: 2000, input: Gen.int64(in: (Int64.min + 999_999_999)...Int64.max)) { ns in
            #expect(RFC3339.string(fromNanoseconds: ns) == Self.reference(ns), "\(ns)")
        }
    }

    @Test func formatsTheEarliestRepresentableInstant() async {
        // Int64.min ns is 1677-09-21T00:12:43.145224192Z. The function takes any
        // Int64 (it is public and used for `created`), so it must not trap.
        await #expect(processExitsWith: .success) {
            let text = RFC3339.string(fromNanoseconds: Int64.min)
            if text != "1677-09-21T00:12:43.145Z" { exit(1) }
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif

import Foundation
import KinetraceTestSupport
import Testing

/// Checks a JUnit report with two independent readers: xmllint against the project's
/// schema (Schemas/junit.xsd: junit-10.xsd's rules and Surefire's decimal time), and
/// junitparser, the Python library CI tools use to read these files.
enum JUnitCheck {
    static let schema = Fixture.packageRoot.appendingPathComponent("Tests/KinetraceCLITests/Schemas/junit.xsd").path
    static let xmllint = Requirement.tools("xmllint")
    static let junitparser = Requirement.python("junitparser")
    static var runs: Bool { xmllint.runs && junitparser.runs }
    static let reason: Comment = "needs xmllint and python3 with junitparser (scripts/bootstrap); with CI set this fails instead"

    static func requireTools() throws {
        try xmllint.check()
        try junitparser.check()
    }

    /// What junitparser read: outcomes counted from the testcases themselves, the counts the
    /// suites declare, and every time attribute as written.
    struct Parsed: Decodable {
        var suites: Int
        var tests: Int
        var failures: Int
        var errors: Int
        var skipped: Int
        /// Per suite: tests, failures, errors, skipped, as junitparser reads the attributes.
        var declared: [[Int]]
        /// Per suite, the float junitparser makes of its time.
        var suiteSeconds: [Double?]
        /// Every `time` attribute as written (documents, suites and cases), nil where absent.
        var times: [String?]
        var names: [String]
        var types: [String?]
        var messages: [String?]
        var texts: [String?]
        var systemOut: [String?]
    }

    static let reader = """
        import json, sys
        import xml.etree.ElementTree as ET
        from junitparser import JUnitXml, TestSuite, Failure, Error, Skipped
        xml = JUnitXml.fromfile(sys.argv[1])
        suites = list(xml) if isinstance(xml, JUnitXml) else [xml]
        out = dict(suites=len(suites), tests=0, failures=0, errors=0, skipped=0, declared=[], suiteSeconds=[],
                   times=[ET.parse(sys.argv[1]).getroot().get("time")], names=[], types=[], messages=[], texts=[], systemOut=[])
        for s in suites:
            # The attribute as written first: junitparser fills in a missing one when asked for it.
            out["times"].append(s._elem.get("time"))
            out["declared"].append([s.tests, s.failures, s.errors, s.skipped])
            out["suiteSeconds"].append(s.time)
            for c in s:
                out["tests"] += 1
                out["names"].append(c.name)
                out["times"].append(c._elem.get("time"))
                out["systemOut"].append(c.system_out)
                for r in c.result:
                    if isinstance(r, Failure): out["failures"] += 1
                    elif isinstance(r, Error): out["errors"] += 1
                    elif isinstance(r, Skipped): out["skipped"] += 1
                    out["types"].append(r.type)
                    out["messages"].append(r.message)
                    out["texts"].append(r.text)
        print(json.dumps(out))
        """

    /// Validates `path` with xmllint and reads it with junitparser; records an issue for each problem.
    static func check(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Parsed {
        let lint = try run(URL(fileURLWithPath: "/usr/bin/env"), ["xmllint", "--noout", "--schema", schema, path])
        #expect(lint.status == 0, "xmllint: \(lint.stderr)", sourceLocation: sourceLocation)
        let read = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", reader, path])
        try #require(read.status == 0, "junitparser: \(read.stderr)", sourceLocation: sourceLocation)
        let parsed = try JSONDecoder().decode(Parsed.self, from: Data(read.stdout.utf8))
        for time in parsed.times.compactMap({ $0 }) {
            #expect(isDecimalSeconds(time), "time \"\(time)\" is not decimal seconds", sourceLocation: sourceLocation)
        }
        // What the suites declare agrees with what their testcases hold.
        #expect(parsed.declared.reduce(into: [0, 0, 0, 0]) { total, suite in for i in 0..<4 { total[i] += suite[i] } }
                == [parsed.tests, parsed.failures, parsed.errors, parsed.skipped], sourceLocation: sourceLocation)
        return parsed
    }

    /// Digits, a point, three digits (Surefire's pattern allows at most three): never an exponent or a sign.
    static func isDecimalSeconds(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && parts[1].count == 3 && parts.allSatisfy { $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
    }
}

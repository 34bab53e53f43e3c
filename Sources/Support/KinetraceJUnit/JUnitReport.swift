/// A JUnit XML report: the one writer behind `conform`, `gestures eval` and
/// `replay --format junit`.
///
/// It writes only what Jenkins' xunit plugin schema (junit-10.xsd) allows, so the
/// same file also reads in Surefire-style consumers (Jenkins' junit step, GitLab,
/// junitparser): `<testsuites>` carries name, tests, failures, errors and time
/// (never skipped); each `<testsuite>` the required name, tests, failures and errors,
/// and skipped, time and timestamp; each `<testcase>` its name, classname and time,
/// with at most one `<failure>`, `<error>` or `<skipped>`. Times are decimal seconds
/// with three places (Surefire's pattern: no exponent, no sign, at most three). Text goes through
/// `JUnitXML.escaped`, which drops nothing a reader needs and everything XML 1.0
/// forbids. `Tests/KinetraceCLITests/Schemas/junit.xsd` states the same rules.
package struct JUnitReport: Sendable, Hashable {
    /// The run, e.g. "kinetrace conform".
    package var name: String
    package var suites: [JUnitSuite]
    /// The whole run's wall time; nil leaves `time` off `<testsuites>`.
    package var durationNs: Int64?

    package init(name: String, suites: [JUnitSuite], durationNs: Int64? = nil) {
        self.name = name
        self.suites = suites
        self.durationNs = durationNs
    }

    package var tests: Int { suites.reduce(0) { $0 + $1.tests } }
    package var failures: Int { suites.reduce(0) { $0 + $1.failures } }
    package var errors: Int { suites.reduce(0) { $0 + $1.errors } }
    package var skipped: Int { suites.reduce(0) { $0 + $1.skipped } }

    /// The document, UTF-8 text with an XML declaration, ending in a newline.
    package func xml() -> String {
        var out = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        out += "<testsuites"
        attribute("name", name, to: &out)
        attribute("tests", String(tests), to: &out)
        attribute("failures", String(failures), to: &out)
        attribute("errors", String(errors), to: &out)
        if let durationNs { attribute("time", JUnitXML.seconds(ns: durationNs), to: &out) }
        out += ">\n"
        for suite in suites { suite.write(to: &out) }
        out += "</testsuites>\n"
        return out
    }
}

/// One `<testsuite>`.
package struct JUnitSuite: Sendable, Hashable {
    package var name: String
    package var durationNs: Int64?
    /// When the suite started: ISO 8601 in UTC to the second, without a zone ("2026-11-24T18:07:19"),
    /// as Ant and Surefire write it. The caller formats it (the trace layer has the calendar).
    package var timestamp: String?
    /// Name–value pairs describing the run (options, target, seed), in order.
    package var properties: [JUnitProperty]
    package var cases: [JUnitCase]
    /// What the whole suite printed, e.g. its one-line status.
    package var systemOut: String?

    package init(name: String, durationNs: Int64? = nil, timestamp: String? = nil, properties: [JUnitProperty] = [],
                cases: [JUnitCase], systemOut: String? = nil) {
        self.name = name
        self.durationNs = durationNs
        self.timestamp = timestamp
        self.properties = properties
        self.cases = cases
        self.systemOut = systemOut
    }

    package var tests: Int { cases.count }
    package var failures: Int { cases.filter { if case .failed = $0.result { return true } else { return false } }.count }
    package var errors: Int { cases.filter { if case .errored = $0.result { return true } else { return false } }.count }
    package var skipped: Int { cases.filter { if case .skipped = $0.result { return true } else { return false } }.count }

    func write(to out: inout String) {
        out += "  <testsuite"
        attribute("name", name, to: &out)
        attribute("tests", String(tests), to: &out)
        attribute("failures", String(failures), to: &out)
        attribute("errors", String(errors), to: &out)
        attribute("skipped", String(skipped), to: &out)
        if let durationNs { attribute("time", JUnitXML.seconds(ns: durationNs), to: &out) }
        if let timestamp { attribute("timestamp", timestamp, to: &out) }
        out += ">\n"
        if !properties.isEmpty {
            out += "    <properties>\n"
            for property in properties {
                out += "      <property"
                attribute("name", property.name, to: &out)
                attribute("value", property.value, to: &out)
                out += "/>\n"
            }
            out += "    </properties>\n"
        }
        for testCase in cases { testCase.write(to: &out) }
        if let systemOut { out += "    <system-out>\(JUnitXML.escaped(systemOut))</system-out>\n" }
        out += "  </testsuite>\n"
    }
}

package struct JUnitProperty: Sendable, Hashable {
    package var name: String
    package var value: String

    package init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// One `<testcase>` and its outcome.
package struct JUnitCase: Sendable, Hashable {
    package enum Result: Sendable, Hashable {
        case passed
        /// The thing under test is wrong: `<failure>`.
        case failed(JUnitProblem)
        /// The harness could not judge it (the host is unreachable, the input is bad): `<error>`.
        case errored(JUnitProblem)
        /// Not judged, with the reason: `<skipped>`.
        case skipped(String)
    }

    package var name: String
    /// Groups cases in CI views (Jenkins splits it at the last dot into package and class).
    package var className: String?
    package var durationNs: Int64?
    package var result: Result
    package var systemOut: String?

    package init(name: String, className: String? = nil, durationNs: Int64? = nil, result: Result = .passed, systemOut: String? = nil) {
        self.name = name
        self.className = className
        self.durationNs = durationNs
        self.result = result
        self.systemOut = systemOut
    }

    func write(to out: inout String) {
        out += "    <testcase"
        attribute("name", name, to: &out)
        if let className { attribute("classname", className, to: &out) }
        if let durationNs { attribute("time", JUnitXML.seconds(ns: durationNs), to: &out) }
        guard result != .passed || systemOut != nil else { return out += "/>\n" }
        out += ">\n"
        switch result {
        case .passed: break
        case .failed(let problem): problem.write("failure", to: &out)
        case .errored(let problem): problem.write("error", to: &out)
        case .skipped(let reason):
            out += "      <skipped"
            attribute("message", reason, to: &out)
            out += "/>\n"
        }
        if let systemOut { out += "      <system-out>\(JUnitXML.escaped(systemOut))</system-out>\n" }
        out += "    </testcase>\n"
    }
}

/// What a `<failure>` or `<error>` says: a short type to group by, a one-line message, and detail.
package struct JUnitProblem: Sendable, Hashable {
    package var type: String
    package var message: String
    /// The element's text: evidence, one item a line; empty for none.
    package var detail: String

    package init(type: String, message: String, detail: String = "") {
        self.type = type
        self.message = message
        self.detail = detail
    }

    func write(_ element: String, to out: inout String) {
        out += "      <\(element)"
        attribute("type", type, to: &out)
        attribute("message", message, to: &out)
        out += detail.isEmpty ? "/>\n" : ">\(JUnitXML.escaped(detail))</\(element)>\n"
    }
}

private func attribute(_ name: String, _ value: String, to out: inout String) {
    out += " \(name)=\"\(JUnitXML.escaped(value, inAttribute: true))\""
}

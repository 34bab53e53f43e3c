import Foundation
import KinetraceTestSupport
import Testing

/// External checks of a rendered document: a real XML parser and a real SVG renderer.
enum SVGChecks {
    /// Attribute values of the document. Text content escapes every `"`, so the
    /// raw quotes are exactly the attribute delimiters.
    static func attributeValues(_ svg: String) -> [String] {
        svg.components(separatedBy: "\"").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
    }

    /// Attribute values that spell a non-number (nan, inf, infinity).
    static func nonFiniteAttributes(_ svg: String) -> [String] {
        attributeValues(svg).filter {
            let lower = $0.lowercased()
            return lower.contains("nan") || lower.contains("inf")
        }
    }

    /// Parses with Python's ElementTree; returns the parser's complaint, or nil when it parses.
    static func xmlParseError(_ svg: String) throws -> String? {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let file = dir.appendingPathComponent("chart.svg")
        try svg.write(to: file, atomically: true, encoding: .utf8)
        let result = try run(
            try Fixture.tool("python3"),
            ["-c", "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])", file.path])
        return result.status == 0 && !result.signalled ? nil : result.stderr
    }

    /// Renders with rsvg-convert; returns the PNG's (width, height) from its IHDR chunk.
    static func renderedSize(_ svg: String) throws -> (width: Int, height: Int) {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let input = dir.appendingPathComponent("chart.svg"), output = dir.appendingPathComponent("chart.png")
        try svg.write(to: input, atomically: true, encoding: .utf8)
        let result = try run(try Fixture.tool("rsvg-convert"), ["-o", output.path, input.path])
        guard result.status == 0, !result.signalled else {
            throw FixtureError("rsvg-convert failed (\(result.status)): \(result.stderr)")
        }
        let png = [UInt8](try Data(contentsOf: output))
        guard png.count >= 24, png[0..<8].elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
              String(decoding: png[12..<16], as: UTF8.self) == "IHDR"
        else { throw FixtureError("rsvg-convert wrote no PNG") }
        func bigEndian(_ bytes: ArraySlice<UInt8>) -> Int { bytes.reduce(0) { $0 << 8 | Int($1) } }
        return (bigEndian(png[16..<20]), bigEndian(png[20..<24]))
    }

    /// All three checks on one figure.
    static func expectValidDocument(
        _ svg: String, width: Int, height: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(nonFiniteAttributes(svg).isEmpty, "non-finite attribute values", sourceLocation: sourceLocation)
        #expect(try xmlParseError(svg) == nil, sourceLocation: sourceLocation)
        let size = try renderedSize(svg)
        #expect(size.width == width && size.height == height, "rendered \(size)", sourceLocation: sourceLocation)
    }
}


/// Latency-like sample data shared by the tests and the example figure.
enum SampleData {
    static func latencies(count: Int, mean: Double = 70, sd: Double = 3.7, seed: UInt64 = 7) -> [Double] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in rng.normal(mean: mean, sd: sd) }
    }

    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        let sorted = values.sorted()
        let rank = fraction * Double(sorted.count - 1)
        let low = Int(rank.rounded(.down)), high = min(low + 1, sorted.count - 1)
        return sorted[low] + (rank - Double(low)) * (sorted[high] - sorted[low])
    }
}

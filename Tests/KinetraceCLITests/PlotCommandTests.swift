import Foundation
import KinetraceSupport
import KinetraceTestSupport
import Testing

@testable import KinetraceCLI

/// The plots the commands write, read back from their SVG, and `--plot-format`
/// with the real rsvg-convert and without it.
@Suite struct PlotCommandTests {
    static let rsvg = Requirement.tools("rsvg-convert")

    /// (name, attributes, text) of every element, as the charts write them.
    static func elements(_ svg: String, class cssClass: String) -> [(attributes: [String: String], text: String)] {
        svg.matches(of: /<([a-z]+)((?:\s+[a-z0-9-]+="[^"]*")*)\s*(\/>|>([^<]*))/).compactMap { match in
            var attributes: [String: String] = [:]
            for a in String(match.2).matches(of: /([a-z0-9-]+)="([^"]*)"/) { attributes[String(a.1)] = String(a.2) }
            return attributes["class"] == cssClass ? (attributes, match.4.map(String.init) ?? "") : nil
        }
    }

    static func decoded(_ text: String) -> String {
        var out = text
        for match in text.matches(of: /&#([0-9]+);/) {
            if let scalar = UInt32(match.1).flatMap(Unicode.Scalar.init) { out = out.replacingOccurrences(of: String(match.0), with: String(scalar)) }
        }
        return out
    }

    /// The plot areas' pixel rectangles and value ranges, in panel order.
    static func plotAreas(_ svg: String) -> [(left: Double, top: Double, width: Double, height: Double, x: [Double], y: [Double])] {
        elements(svg, class: "plot-area").map { a, _ in
            (Double(a["x"]!)!, Double(a["y"]!)!, Double(a["width"]!)!, Double(a["height"]!)!,
             a["data-x-range"]!.split(separator: " ").map { Double($0)! }, a["data-y-range"]!.split(separator: " ").map { Double($0)! })
        }
    }

    @Test func theSweepPlotIsAConnectedLabelledCurveInThresholdOrderOnAnAxisInG() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let svgPath = dir.appendingPathComponent("pr.svg").path
        let corpus = Fixture.packageRoot.appendingPathComponent("captures/gestures").path
        let result = try kinetrace(["gestures", "eval", "--detector", "threshold", "--sweep", "threshold=0.1:1.5:0.05",
                                    "--format", "json", "--plot", svgPath, corpus], timeout: 300)
        try #require(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let sweep = try #require((json["sweep"] as? [String: Any])?["points"] as? [[String: Any]])
        let expected = sweep.compactMap { p -> (value: Double, recall: Double, precision: Double)? in
            guard let r = p["recall"] as? Double, let pr = p["precision"] as? Double else { return nil }
            return (p["value"] as! Double, r, pr)
        }
        #expect(expected.map(\.value) == expected.map(\.value).sorted(), "the sweep is reported in threshold order")

        let svg = try String(contentsOfFile: svgPath, encoding: .utf8)
        let areas = Self.plotAreas(svg)
        try #require(areas.count == 2)
        let pr = areas[0]
        // The first panel's curve: one path, one subpath, a vertex per value in threshold order.
        let paths = Self.elements(svg, class: "series")
        let d = try #require(paths.first?.attributes["d"])
        #expect(d.filter { $0 == "M" }.count == 1)
        let vertices = d.matches(of: /[ML](-?[0-9.]+) (-?[0-9.]+)/).map { (Double($0.1)!, Double($0.2)!) }
        try #require(vertices.count == expected.count)
        for (vertex, point) in zip(vertices, expected) {
            let x = pr.left + (point.recall - pr.x[0]) / (pr.x[1] - pr.x[0]) * pr.width
            let y = pr.top + pr.height - (point.precision - pr.y[0]) / (pr.y[1] - pr.y[0]) * pr.height
            #expect(abs(vertex.0 - x) < 0.01 && abs(vertex.1 - y) < 0.01, "threshold \(point.value)")
            // Precision 1.0 is inside the plot area, not on its top edge.
            #expect(vertex.1 > pr.top + 3 && vertex.1 < pr.top + pr.height - 3 && vertex.0 > pr.left + 3 && vertex.0 < pr.left + pr.width - 3)
        }
        #expect(expected.contains { $0.precision == 1.0 }, "the corpus reaches precision 1.0")
        // Threshold labels in g, some of them, among the threshold values swept.
        let labels = Self.elements(svg, class: "point-label").map(\.text)
        #expect(labels.count >= 3 && labels.allSatisfy { $0.hasSuffix(" g") }, "\(labels)")
        let values = Set(expected.map { GestureFigures.compact($0.value) })
        #expect(labels.allSatisfy { values.contains(String($0.dropLast(2))) }, "\(labels)")
        // The second panel's x axis is the threshold, in g; F1, precision and recall each have a look of their own.
        let xTitles = Self.elements(svg, class: "x-title").map(\.text)
        #expect(xTitles == ["recall", "threshold (g)"])
        let scoreLines = paths.dropFirst()
        #expect(Set(scoreLines.map { "\($0.attributes["stroke"]!) \($0.attributes["stroke-dasharray"]!)" }).count == 3)
        #expect(Set(scoreLines.map { $0.attributes["stroke-dasharray"]! }).count == 3)
        let legend = Self.elements(svg, class: "legend").map { Self.decoded($0.text) }
        for name in ["F1", "precision", "recall", "best F1"] { #expect(legend.contains(name), "\(legend)") }
        #expect(Self.elements(svg, class: "title").allSatisfy { !$0.text.hasPrefix("Figure") })
    }

    @Test func theLatencyFigureHasNoFigureNumberAndEveryLineInItsLegend() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let svgPath = dir.appendingPathComponent("latency.svg").path
        let result = try kinetrace("latency", Fixture.bundledTrace, "--plot", svgPath)
        try #require(result.status == 0, "\(result.stderr)")
        let svg = try String(contentsOfFile: svgPath, encoding: .utf8)
        let titles = Self.elements(svg, class: "title").map(\.text)
        #expect(titles.count == 3 && titles.allSatisfy { !$0.hasPrefix("Figure") }, "\(titles)")
        // The per-frame panel: mean, p95 and both 3σ bounds drawn, one legend entry for the bounds.
        let firstPanel = String(svg.components(separatedBy: "<g transform=\"translate(0 300)\">")[0])
        let references = Self.elements(firstPanel, class: "reference")
        #expect(references.count == 4)
        let legend = Self.elements(firstPanel, class: "legend").map { Self.decoded($0.text) }
        for entry in ["mean (Table I)", "p95 (Table I)", "±3.0σ outlier bounds"] { #expect(legend.contains(entry), "\(legend)") }
        #expect(legend.filter { $0.contains("σ") }.count == 1)
        // No point on the frame: every mark's first pixel lies inside the plot area.
        let area = try #require(Self.plotAreas(firstPanel).first)
        for series in Self.elements(firstPanel, class: "series") {
            let start = try #require(series.attributes["d"]?.firstMatch(of: /M(-?[0-9.]+) (-?[0-9.]+)/))
            let x = Double(start.1)!, y = Double(start.2)!
            #expect(x > area.left + 1 && x < area.left + area.width - 1 && y > area.top + 1 && y < area.top + area.height - 1)
        }
    }

    /// The conform plot draws the p99 the verdict compares, at its value, and keeps its label off the points.
    @Test func theConformPlotDrawsTheJudgedP99() throws {
        var rng = SeededGenerator(seed: 16)
        let delays = (0..<100).map { _ in max(0.5, rng.normal(mean: 6, sd: 1.5)) }
        // Nearest rank, as the ack-delay cases compute the p99 they judge.
        let p99 = delays.sorted()[Int((0.99 * Double(delays.count)).rounded(.up)) - 1]
        let svg = LatencyFigures.delayFigure(title: "AC-ACK-PROMPT ack delay", values: delays, unit: "ms", limit: 10, judged: ("p99", p99))
        let scatter = String(svg.components(separatedBy: "<g transform=\"translate(0 300)\">")[0])
        let area = try #require(Self.plotAreas(scatter).first)
        let lines = Self.elements(scatter, class: "reference")
        let p99Line = try #require(lines.first { Double($0.attributes["data-value"]!) == p99 })
        let y = area.top + area.height - (p99 - area.y[0]) / (area.y[1] - area.y[0]) * area.height
        #expect(abs(Double(p99Line.attributes["y1"]!)! - y) < 0.01)
        #expect(lines.contains { $0.attributes["data-value"] == "10.0" }, "the limit is drawn too")
        let label = try #require(Self.elements(scatter, class: "reference-label").first { $0.text.hasPrefix("p99 ") })
        let legend = Self.elements(scatter, class: "legend").map(\.text)
        #expect(legend.contains("p99, judged against the limit") && legend.contains("limit"))
        // The label's box covers no delay's dot.
        let x0 = Double(label.attributes["x"]!)!, baseline = Double(label.attributes["y"]!)!
        let width = Double(label.text.count) * 10 * 0.6
        for (index, delay) in delays.enumerated() {
            let px = area.left + (Double(index + 1) - area.x[0]) / (area.x[1] - area.x[0]) * area.width
            let py = area.top + area.height - (delay - area.y[0]) / (area.y[1] - area.y[0]) * area.height
            #expect(!(px > x0 - 2 && px < x0 + width + 2 && py > baseline - 11 && py < baseline + 3), "the label covers trigger \(index + 1)")
        }
    }

    /// End to end: the HTML report's ack-delay plot draws the p99 the case measured.
    @Test func theConformReportPlotsTheMeasuredP99() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let html = dir.appendingPathComponent("report.html").path
        let result = try kinetrace(["conform", "--cases", "AC-ACK-DEADLINE", "--format", "html", "--out", html], timeout: 120)
        try #require(result.status == 0, "\(result.stderr)")
        let page = try String(contentsOfFile: html, encoding: .utf8)
        let measured = try #require(page.firstMatch(of: /p99 ([0-9.]+) ms, max/))
        let line = try #require(Self.elements(page, class: "reference").first)
        #expect(abs(Double(line.attributes["data-value"]!)! - Double(measured.1)!) < 0.0005)
        #expect(page.contains(#"<tr class="plots"><td colspan="6">"#) && page.contains(".plot svg { display: block; width: 100%;"))
    }

    @Test func pngAndPDFComeFromRsvgConvert() throws {
        guard try Self.rsvg.available() else { return }
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        for (format, magic) in [("png", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] as [UInt8]), ("pdf", Array("%PDF".utf8))] {
            // An extension that names no format: --plot-format decides, and the name is kept as given.
            let path = dir.appendingPathComponent("figure-\(format).out").path
            let result = try kinetrace("latency", Fixture.bundledTrace, "--plot", path, "--plot-format", format)
            #expect(result.status == 0, "\(result.stderr)")
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(bytes.starts(with: magic), "\(format) starts \(bytes.prefix(8))")
        }
        // The extension decides when the option is not given.
        let png = dir.appendingPathComponent("sweep.png").path
        let sweep = try kinetrace("gestures", "eval", "--detector", "threshold", "--sweep", "threshold=0.3:0.7:0.1", "--plot", png, Fixture.bundledTrace)
        #expect(sweep.status == 0, "\(sweep.stderr)")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: png))).starts(with: [0x89, 0x50, 0x4E, 0x47]))
    }

    @Test func withoutRsvgConvertPNGIsOneLineAndExit69() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let emptyPath = dir.appendingPathComponent("empty-bin")
        try FileManager.default.createDirectory(at: emptyPath, withIntermediateDirectories: true)
        let output = dir.appendingPathComponent("figure.png").path
        for arguments in [["latency", Fixture.bundledTrace, "--plot", output],
                          ["gestures", "eval", "--detector", "threshold", "--plot", output, "--plot-format", "png", Fixture.bundledTrace]] {
            let process = Process()
            process.executableURL = try Fixture.binary
            process.arguments = arguments
            process.environment = ["PATH": emptyPath.path]
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 69, "\(stderr)")
            #expect(stderr.split(separator: "\n").count == 1 && stderr.hasPrefix("kinetrace: error: ") && stderr.contains("rsvg-convert"), "\(stderr)")
            #expect(!FileManager.default.fileExists(atPath: output))
        }
    }

    @Test func aFormatTheFileNameContradictsIsAUsageError() throws {
        let result = try kinetrace("latency", Fixture.bundledTrace, "--plot", "/tmp/never-written.svg", "--plot-format", "png")
        #expect(result.status == 64 && result.stderr.contains("--plot-format is png"), "\(result.stderr)")
        let alone = try kinetrace("latency", Fixture.bundledTrace, "--plot-format", "pdf")
        #expect(alone.status == 64 && alone.stderr.contains("--plot-format needs --plot"), "\(alone.stderr)")
    }
}

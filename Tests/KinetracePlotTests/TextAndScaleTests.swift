import Foundation
import KinetraceTestSupport
import Testing

@testable import KinetracePlot

@Suite struct EscapingTests {
    @Test func hostileSeriesNameIsEscapedAndStillParses() throws {
        let name = "<a&\"b'>"
        let points = [PlotPoint(x: 1, y: 2), PlotPoint(x: 2, y: 3)]
        let chart = Charts.scatter(
            title: "title <&>", xLabel: "x \"quoted\"", yLabel: "y 'single'",
            series: [PlotSeries(name: name, points: points), PlotSeries(name: "plain", points: points)],
            references: [ReferenceLine(label: "a<b", value: 2.5)])
        let svg = Charts.figure(title: "doc <&>", charts: [chart])
        #expect(svg.contains(">&lt;a&amp;&quot;b&#39;&gt;</text>"))
        #expect(!svg.contains(name))
        #expect(svg.contains(">title &lt;&amp;&gt;</text>"))
        #expect(svg.contains(">a&lt;b</text>"))
        #expect(svg.contains("<title>doc &lt;&amp;&gt;</title>"))
        #expect(try SVGChecks.xmlParseError(svg) == nil)
    }

    @Test func nonASCIIAndControlCharactersBecomeReferences() throws {
        #expect(xmlEscaped("≤ 5 µs") == "&#8804; 5 &#181;s")
        #expect(xmlEscaped("a\u{1}b\u{7}") == "a&#65533;b&#65533;")
        #expect(xmlEscaped("tab\tnew\nline") == "tab new line")
        let chart = Charts.cdf(title: "größe \u{0}\u{1F600}", xLabel: "ms", series: [CDFSeries(name: "x", values: [1, 2])])
        let svg = Charts.figure(title: "unicode ✓", charts: [chart])
        let allASCII = svg.unicodeScalars.allSatisfy { $0.isASCII }
        #expect(allASCII)
        #expect(try SVGChecks.xmlParseError(svg) == nil)
    }
}

@Suite struct NumberFormattingTests {
    @Test func fixedPointFormatting() {
        #expect(formatFixed(0.5, decimals: 1) == "0.5")
        #expect(formatFixed(1234.5678, decimals: 2) == "1234.57")
        #expect(formatFixed(70, decimals: 0) == "70")
        #expect(formatFixed(-2.5, decimals: 0) == "-3")
        #expect(formatFixed(0.05, decimals: 3) == "0.050")
        #expect(formatFixed(-0.0001, decimals: 2) == "0.00")
        #expect(formatFixed(-0.0, decimals: 1) == "0.0")
        #expect(formatFixed(3 * 0.1, decimals: 1) == "0.3")
        #expect(formatFixed(.nan, decimals: 2) == "0")
        #expect(formatFixed(-.infinity, decimals: 2) == "0")
        #expect(formatFixed(1e20, decimals: 0) == "1e20")
    }

    @Test func scientificFormatting() {
        #expect(formatScientific(1e300, significantDigits: 3) == "1e300")
        #expect(formatScientific(-2.5e-12, significantDigits: 3) == "-2.5e-12")
        #expect(formatScientific(9.996e5, significantDigits: 3) == "1e6")
        #expect(formatScientific(.leastNonzeroMagnitude, significantDigits: 2) == "4.9e-324")
        #expect(formatScientific(0, significantDigits: 3) == "0")
        // Extreme axes switch to scientific labels that still tell the ticks apart.
        #expect(NiceScale.axis(lower: -1e300, upper: 1e300).labels == ["-1e300", "-5e299", "0", "5e299", "1e300"])
    }

    @Test func svgNumbersHaveAtMostTwoDecimals() {
        #expect(svgNumber(12.5) == "12.5")
        #expect(svgNumber(12.0) == "12")
        #expect(svgNumber(1.005_1) == "1.01")
        #expect(svgNumber(-0.001) == "0")
        #expect(svgNumber(99.999) == "100")
    }
}

@Suite struct NiceScaleTests {
    @Test func zeroTo73Point2() {
        let axis = NiceScale.axis(lower: 0, upper: 73.2)
        #expect(axis.step == 10 || axis.step == 20)
        #expect(axis.lower == 0 && axis.upper >= 73.2 && axis.upper < 73.2 + axis.step)
        #expect((5...8).contains(axis.ticks.count))
        #expect(axis.decimals == 0)
        #expect(axis.labels.first == "0")
    }

    @Test func straddlingZero() {
        let axis = NiceScale.axis(lower: -3.1, upper: 4.7)
        #expect(axis.ticks.contains(0))
        #expect(axis.lower <= -3.1 && axis.upper >= 4.7)
        #expect(axis.lower >= -3.1 - axis.step && axis.upper <= 4.7 + axis.step)
        // Symmetric-ish: the ends differ by at most one step in magnitude.
        #expect(abs(axis.upper + axis.lower) <= axis.step)
        #expect(!axis.labels.contains { $0.hasPrefix("-0") })
    }

    @Test func decimalsFollowTheStep() {
        let halves = NiceScale.axis(lower: 0, upper: 3.4)
        #expect(halves.step == 0.5)
        #expect(halves.labels == ["0.0", "0.5", "1.0", "1.5", "2.0", "2.5", "3.0", "3.5"])
        let tenths = NiceScale.axis(lower: 0.12, upper: 0.71)
        #expect(tenths.step == 0.1 && tenths.labels.first == "0.1" && tenths.labels.last == "0.8")
        let twenties = NiceScale.axis(lower: 0, upper: 140)
        #expect(twenties.step == 20 && twenties.labels.allSatisfy { !$0.contains(".") })
        let latency = NiceScale.axis(lower: 58.3, upper: 83.9)
        #expect(latency.step == 5 && latency.labels == ["55", "60", "65", "70", "75", "80", "85"])
    }

    @Test func integerStepsForCounts() {
        let axis = NiceScale.axis(lower: 0, upper: 3, integerSteps: true)
        #expect(axis.step == 1 && axis.labels == ["0", "1", "2", "3"])
        #expect(NiceScale.axis(lower: 0, upper: 1, integerSteps: true).labels == ["0", "1"])
    }

    @Test func degenerateRangesWiden() {
        let single = NiceScale.axis(lower: 70, upper: 70)
        #expect(single.lower <= 63 && single.upper >= 77 && single.ticks.count >= 3)
        let zero = NiceScale.axis(lower: 0, upper: 0)
        #expect(zero.lower <= -1 && zero.upper >= 1 && zero.ticks.contains(0))
        let nonsense = NiceScale.axis(lower: .nan, upper: .infinity)
        #expect(nonsense.lower == 0 && nonsense.upper == 1)
        let reversed = NiceScale.axis(lower: 5, upper: -5)
        #expect(reversed.lower < reversed.upper)
    }

    /// Over many seeded random ranges: the ticks cover the range, stay within the
    /// tick budget, use 1-2-5 steps, and print distinctly without "-0".
    @Test func propertiesOverRandomRanges() {
        var rng = SplitMix64(seed: 2024)
        for _ in 0..<2000 {
            let scale = Foundation.pow(10, Double(Int(rng.next() % 16)) - 8)
            let a = (rng.unit() * 2 - 1) * scale * 100, b = (rng.unit() * 2 - 1) * scale * 100
            let low = min(a, b), high = max(a, b)
            let maxTicks = 3 + Int(rng.next() % 6)
            let axis = NiceScale.axis(lower: low, upper: high, maxTicks: maxTicks)
            let (drawLow, drawHigh) = drawableRange(low, high)
            #expect(axis.lower <= drawLow + abs(drawLow) * 1e-12 && axis.upper >= drawHigh - abs(drawHigh) * 1e-12)
            #expect(axis.ticks.count >= 2 && axis.ticks.count <= maxTicks)
            let mantissa = axis.step / Foundation.pow(10, Foundation.floor(Foundation.log10(axis.step)))
            #expect([1.0, 2, 5].contains { abs(mantissa - $0) < 1e-9 }, "step \(axis.step)")
            let labels = axis.labels
            #expect(Set(labels).count == labels.count, "\(labels)")
            #expect(!labels.contains { $0.hasPrefix("-") && Double($0) == 0 }, "\(labels)")
        }
    }
}

import Foundation
import Testing

/// Reads back the structure the charts mark with classes: the plot area and
/// its axis ranges, series paths, points, labels, reference lines, legend.
struct SVGElement {
    var name: String
    var attributes: [String: String]
    var text: String

    subscript(_ key: String) -> String? { attributes[key] }
    func number(_ key: String) -> Double? { attributes[key].flatMap(Double.init) }
}

enum SVGStructure {
    /// Every element (self-closing or with text content) of the document, in order.
    static func elements(_ svg: String) -> [SVGElement] {
        var out: [SVGElement] = []
        let tag = /<([a-z]+)((?:\s+[a-z0-9-]+="[^"]*")*)\s*(\/>|>([^<]*))/
        let attribute = /([a-z0-9-]+)="([^"]*)"/
        for match in svg.matches(of: tag) {
            var attributes: [String: String] = [:]
            for a in String(match.2).matches(of: attribute) { attributes[String(a.1)] = String(a.2) }
            out.append(SVGElement(name: String(match.1), attributes: attributes, text: match.4.map(String.init) ?? ""))
        }
        return out
    }

    static func withClass(_ cssClass: String, in svg: String) -> [SVGElement] {
        elements(svg).filter { $0["class"] == cssClass }
    }

    /// Vertices of an "M x y L x y …" path.
    static func vertices(_ path: String) -> [(x: Double, y: Double)] {
        path.matches(of: /[ML](-?[0-9.]+) (-?[0-9.]+)/).map { (Double($0.1)!, Double($0.2)!) }
    }

    /// The plot area of one panel, and the mapping between values and pixels it declares.
    struct PlotArea {
        var left, top, width, height: Double
        var xRange: (Double, Double)
        var yRange: (Double, Double)
        var right: Double { left + width }
        var bottom: Double { top + height }

        init?(_ element: SVGElement) {
            guard let left = element.number("x"), let top = element.number("y"), let width = element.number("width"),
                  let height = element.number("height"),
                  let x = element["data-x-range"]?.split(separator: " ").compactMap({ Double($0) }), x.count == 2,
                  let y = element["data-y-range"]?.split(separator: " ").compactMap({ Double($0) }), y.count == 2
            else { return nil }
            (self.left, self.top, self.width, self.height) = (left, top, width, height)
            (xRange, yRange) = ((x[0], x[1]), (y[0], y[1]))
        }

        func pixelX(_ value: Double) -> Double { left + (value - xRange.0) / (xRange.1 - xRange.0) * width }
        func pixelY(_ value: Double) -> Double { bottom - (value - yRange.0) / (yRange.1 - yRange.0) * height }

        /// Strictly inside, at least `margin` px from every edge of the frame.
        func holdsInside(_ x: Double, _ y: Double, margin: Double = 1) -> Bool {
            x >= left + margin && x <= right - margin && y >= top + margin && y <= bottom - margin
        }
    }

    static func plotAreas(_ svg: String) -> [PlotArea] {
        withClass("plot-area", in: svg).compactMap(PlotArea.init)
    }

    /// The box a label's text covers, estimated as the charts estimate it (0.6 em a character).
    static func textBox(_ element: SVGElement) -> (x0: Double, y0: Double, x1: Double, y1: Double)? {
        guard let x = element.number("x"), let y = element.number("y"), let size = element.number("font-size") else { return nil }
        let characters = Double(decodedText(element.text).count)
        let width = characters * size * 0.6
        let x0: Double
        switch element["text-anchor"] {
        case "middle": x0 = x - width / 2
        case "end": x0 = x - width
        default: x0 = x
        }
        return (x0, y - size * 0.8, x0 + width, y + size * 0.2)
    }

    /// Text content with the charts' character references decoded.
    static func decodedText(_ text: String) -> String {
        var out = text
        for match in text.matches(of: /&#([0-9]+);/) {
            if let scalar = UInt32(match.1).flatMap(Unicode.Scalar.init) { out = out.replacingOccurrences(of: String(match.0), with: String(scalar)) }
        }
        return out.replacingOccurrences(of: "&amp;", with: "&").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
    }

    /// Whether the segment a–b passes through the box (clipped against it, Liang–Barsky).
    static func segment(_ a: (x: Double, y: Double), _ b: (x: Double, y: Double),
                        crosses box: (x0: Double, y0: Double, x1: Double, y1: Double)) -> Bool {
        var t0 = 0.0, t1 = 1.0
        let dx = b.x - a.x, dy = b.y - a.y
        for (p, q) in [(-dx, a.x - box.x0), (dx, box.x1 - a.x), (-dy, a.y - box.y0), (dy, box.y1 - a.y)] {
            if p == 0 {
                if q < 0 { return false }
            } else {
                let t = q / p
                if p < 0 { t0 = max(t0, t) } else { t1 = min(t1, t) }
                if t0 > t1 { return false }
            }
        }
        return true
    }

    static func overlap(_ a: (x0: Double, y0: Double, x1: Double, y1: Double), _ b: (x0: Double, y0: Double, x1: Double, y1: Double)) -> Bool {
        a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1
    }
}

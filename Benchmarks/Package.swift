// swift-tools-version:6.1
import PackageDescription
import class Foundation.ProcessInfo
import struct Foundation.URL

// SwiftPM names a path dependency after its folder, which is whatever the
// clone was called; look it up instead of assuming "Kinetrace".
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

// The benchmarks measure Kinetrace's internals, which are `package` access, not public API:
// they compile as part of Kinetrace's package (SwiftPM names it after the folder, lowercased).
let insideKinetrace: [SwiftSetting] = [.unsafeFlags(["-package-name", root.lowercased()])]

// Benchmarks live in their own package so the main build never compiles
// ordo-one/benchmark. Run: `make bench` (or `swift package benchmark` here).
let package = Package(
    name: "KinetraceBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "CodecBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "KinetraceWire", package: root),
                .product(name: "KinetraceTrace", package: root),
                .product(name: "KinetraceSimulation", package: root),
            ],
            path: "Benchmarks/CodecBenchmarks",
            packageAccess: false,  // no -package-name of its own: it takes Kinetrace's (insideKinetrace)
            swiftSettings: insideKinetrace,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
        .executableTarget(
            name: "PcapBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "KinetracePcap", package: root),
                .product(name: "KinetraceSupport", package: root),
                .product(name: "KinetraceTrace", package: root),
                .product(name: "KinetraceWire", package: root),
            ],
            path: "Benchmarks/PcapBenchmarks",
            packageAccess: false,  // no -package-name of its own: it takes Kinetrace's (insideKinetrace)
            swiftSettings: insideKinetrace,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
        .executableTarget(
            name: "ReplayBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "KinetraceReplay", package: root),
                .product(name: "KinetraceTrace", package: root),
                .product(name: "KinetraceWire", package: root),
            ],
            path: "Benchmarks/ReplayBenchmarks",
            packageAccess: false,  // no -package-name of its own: it takes Kinetrace's (insideKinetrace)
            swiftSettings: insideKinetrace,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
        .executableTarget(
            name: "GestureBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "KinetraceGestures", package: root),
                .product(name: "KinetraceTrace", package: root),
                .product(name: "KinetraceWire", package: root),
            ],
            path: "Benchmarks/GestureBenchmarks",
            packageAccess: false,  // no -package-name of its own: it takes Kinetrace's (insideKinetrace)
            swiftSettings: insideKinetrace,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
        // Not a benchmark suite (the plugin takes every executable target under
        // Benchmarks/ for one): the workloads identity/perf-compare.sh counts
        // instructions of under callgrind. See identity/IdentityDrivers/main.swift.
        .executableTarget(
            name: "IdentityDrivers",
            dependencies: [
                .product(name: "KinetraceReplay", package: root),
                .product(name: "KinetraceSimulation", package: root),
                .product(name: "KinetraceSupport", package: root),
                .product(name: "KinetraceTrace", package: root),
                .product(name: "KinetraceWire", package: root),
            ],
            path: "identity/IdentityDrivers",
            packageAccess: false,  // no -package-name of its own: it takes Kinetrace's (insideKinetrace)
            swiftSettings: insideKinetrace),
    ]
)

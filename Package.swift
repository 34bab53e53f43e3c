// swift-tools-version:6.1
import PackageDescription

// Layering, bottom to top; a target may only depend on targets below it.
//   1. Wire     – KinetraceWire: pure codecs, one folder per wire profile (no I/O).
//   2. Formats  – KinetraceTrace (trace v1, JSON Lines), KinetracePcap (pcap/pcapng via libpcap).
//   3. Engines  – KinetraceAnalysis, KinetracePlot (SVG charts), KinetraceGestures, KinetraceSimulation, KinetraceTransport (sockets, threads, child processes),
//                 KinetraceHost, KinetraceController, KinetraceCapture, KinetraceReplay.
//   4. CLI      – KinetraceCLI (commands) and the `kinetrace` executable.
let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "Kinetrace",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "kinetrace", targets: ["kinetrace"]),
        .library(name: "KinetraceWire", targets: ["KinetraceWire"]),
        .library(name: "KinetraceTrace", targets: ["KinetraceTrace"]),
        .library(name: "KinetracePcap", targets: ["KinetracePcap"]),
        .library(name: "KinetraceHost", targets: ["KinetraceHost"]),
        .library(name: "KinetraceController", targets: ["KinetraceController"]),
        .library(name: "KinetraceCapture", targets: ["KinetraceCapture"]),
        .library(name: "KinetraceReplay", targets: ["KinetraceReplay"]),
        .library(name: "KinetraceTransport", targets: ["KinetraceTransport"]),
        .library(name: "KinetraceConformance", targets: ["KinetraceConformance"]),
        .library(name: "KinetraceAnalysis", targets: ["KinetraceAnalysis"]),
        .library(name: "KinetraceSimulation", targets: ["KinetraceSimulation"]),
        .library(name: "KinetracePlot", targets: ["KinetracePlot"]),
        .library(name: "KinetraceGestures", targets: ["KinetraceGestures"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // 1. Wire
        .target(name: "KinetraceWire", path: "Sources/Wire/KinetraceWire", swiftSettings: strict),
        // 2. Formats
        .target(
            name: "KinetraceTrace",
            dependencies: ["KinetraceWire"],
            path: "Sources/Formats/KinetraceTrace", swiftSettings: strict),
        .systemLibrary(
            name: "CPcap", path: "Sources/Formats/CPcap", pkgConfig: "libpcap",
            providers: [.apt(["libpcap-dev"]), .brew(["libpcap"])]),
        .target(
            name: "KinetracePcap",
            dependencies: ["KinetraceWire", "KinetraceTrace", "CPcap"],
            path: "Sources/Formats/KinetracePcap", swiftSettings: strict),
        // 3. Engines
        .target(
            name: "KinetraceAnalysis",
            dependencies: [
                "KinetraceWire", "KinetraceTrace",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Sources/Engines/KinetraceAnalysis", swiftSettings: strict),
        // Pure SVG charts (no I/O), shared by `kinetrace latency` and the conformance report.
        .target(name: "KinetracePlot", path: "Sources/Engines/KinetracePlot", swiftSettings: strict),
        // Gesture detectors and their scoring against labelled traces (no I/O beyond reading a trace).
        .target(
            name: "KinetraceGestures",
            dependencies: ["KinetraceWire", "KinetraceTrace"],
            path: "Sources/Engines/KinetraceGestures", swiftSettings: strict),
        .target(
            name: "KinetraceSimulation",
            dependencies: [
                "KinetraceWire", "KinetraceTrace",
                .product(name: "HeapModule", package: "swift-collections"),
            ],
            path: "Sources/Engines/KinetraceSimulation", swiftSettings: strict),
        .target(
            name: "KinetraceHost",
            dependencies: [
                "KinetraceWire", "KinetraceTrace",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Engines/KinetraceHost", swiftSettings: strict),
        // One C function Swift cannot call itself (variadic prctl).
        .target(name: "CKinetraceSystem", path: "Sources/Engines/CKinetraceSystem"),
        .target(
            name: "KinetraceTransport",
            dependencies: ["KinetraceWire", "KinetraceTrace", "CKinetraceSystem"],
            path: "Sources/Engines/KinetraceTransport", swiftSettings: strict),
        .target(
            name: "KinetraceController",
            dependencies: [
                "KinetraceWire", "KinetraceTrace", "KinetraceSimulation", "KinetraceAnalysis", "KinetraceTransport",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Engines/KinetraceController", swiftSettings: strict),
        .target(
            name: "KinetraceReplay",
            dependencies: [
                "KinetraceWire", "KinetraceTrace", "KinetracePcap", "KinetraceSimulation", "KinetraceAnalysis",
                "KinetraceTransport",
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Engines/KinetraceReplay", swiftSettings: strict),
        .target(
            name: "KinetraceConformance",
            dependencies: ["KinetraceWire", "KinetraceTrace", "KinetraceTransport", "KinetraceReplay", "KinetraceSimulation"],
            path: "Sources/Engines/KinetraceConformance", swiftSettings: strict),
        .target(
            name: "KinetraceCapture",
            dependencies: [
                "KinetraceWire", "KinetraceTrace", "KinetracePcap", "CPcap",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Engines/KinetraceCapture", swiftSettings: strict),
        // 4. CLI
        .target(
            name: "KinetraceCLI",
            dependencies: [
                "KinetraceWire", "KinetraceTrace", "KinetracePcap", "KinetraceAnalysis", "KinetraceSimulation",
                "KinetraceHost", "KinetraceController", "KinetraceCapture", "KinetraceReplay", "KinetraceTransport",
                "KinetraceConformance", "KinetracePlot", "KinetraceGestures",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/CLI/KinetraceCLI", swiftSettings: strict),
        .executableTarget(
            name: "kinetrace", dependencies: ["KinetraceCLI"],
            path: "Sources/CLI/kinetrace", swiftSettings: strict),

        // Tests, one target per layer, plus the process helpers they share.
        .target(name: "KinetraceTestSupport", path: "Tests/KinetraceTestSupport", swiftSettings: strict),
        .testTarget(
            name: "KinetraceWireTests",
            dependencies: ["KinetraceWire", .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: strict),
        .testTarget(
            name: "KinetraceTraceTests",
            dependencies: [
                "KinetraceTrace", "KinetraceWire",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "KinetracePcapTests",
            dependencies: ["KinetracePcap", "KinetraceTrace", "KinetraceWire", "CPcap", "KinetraceTestSupport"],
            exclude: ["Fixtures"],
            swiftSettings: strict),
        .testTarget(
            name: "KinetraceLiveTests",
            dependencies: ["KinetraceHost", "KinetraceController", "KinetraceCapture", "KinetracePcap", "KinetraceTrace", "KinetraceWire",
                           "KinetraceTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "KinetraceReplayTests",
            dependencies: ["KinetraceReplay", "KinetraceSimulation", "KinetraceTrace", "KinetraceWire", "KinetraceTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "KinetraceConformanceTests",
            dependencies: ["KinetraceConformance", "KinetraceTrace", "KinetraceWire", "KinetraceReplay", "KinetraceTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "KinetraceDissectorTests",
            dependencies: ["KinetraceTrace", "KinetraceWire"],
            swiftSettings: strict),
        .testTarget(
            name: "KinetraceEngineTests",
            dependencies: ["KinetraceAnalysis", "KinetraceSimulation", "KinetraceGestures", "KinetraceTrace", "KinetraceWire", "KinetraceTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "KinetracePlotTests",
            dependencies: ["KinetracePlot", "KinetraceTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "KinetraceCLITests",
            dependencies: ["KinetraceCLI", "KinetraceAnalysis", "KinetraceTrace", "KinetraceWire", "KinetraceTestSupport"],
            exclude: ["Golden"],
            swiftSettings: strict),
    ]
)

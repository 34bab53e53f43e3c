// swift-tools-version:6.2
import PackageDescription

// Layering, bottom to top; a target depends only on targets of lower layers,
// plus the same-layer edges listed in scripts/check-layers (which CI runs).
//   1. Support  – KinetraceSupport (clocks, locks, POSIX files, worker threads, the seeded
//                 generator, duration statistics; CKinetraceSystem is its C shim) and
//                 KinetraceJSON (the JSON value, writer and pull scanner; pure) and
//                 KinetraceJUnit (the one JUnit XML writer; pure: no imports at all).
//   2. Wire     – KinetraceWire: pure codecs, one folder per wire protocol, the protocol
//                 abstraction and its registry (standard library and KinetraceJSON only);
//                 KinetraceWebSocket: the RFC 6455 codec (no imports at all).
//   3. Formats  – KinetraceTrace (trace v1, JSON Lines), KinetracePcap (pcap/pcapng via libpcap,
//                 read and written as trace records, so it uses KinetraceTrace).
//   4. Transport – KinetraceTransport: the carriers behind one seam (`Transport`): a
//                 controller's connection (plain sockets, for timing), a host's listener
//                 (SwiftNIO), the controller link; child processes for exec hosts.
//                 KinetraceTLS: TLS for wss:// (NIOSSL), a provider the command plugs in.
//                 KinetraceImpairment: what a network does to messages, and the replay
//                 planner that applies it (pure).
//   5. Engines  – KinetraceAnalysis, KinetracePlot, KinetraceGestures, KinetraceSimulation,
//                 KinetraceHost, KinetraceController (uses Simulation's phone model),
//                 KinetraceCapture, KinetraceReplay, KinetraceConformance: every engine
//                 reaches hosts and controllers through Transport, never through a
//                 carrier of its own.
//   6. CLI      – KinetraceCLI (commands) and the `kinetrace` executable.
// CI (CI set, as .ci/run does) builds with no warnings: every warning in Kinetrace's own
// targets is an error there, never in a dependency's.
let warningsAsErrors: [SwiftSetting] = (Context.environment["CI"] ?? "").isEmpty ? [] : [.treatAllWarnings(as: .error)]
let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)] + warningsAsErrors

let package = Package(
    name: "Kinetrace",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "kinetrace", targets: ["kinetrace"]),
        // The libraries a user imports: their public API is documented (DocC) and kept stable.
        .library(name: "KinetraceWire", targets: ["KinetraceWire"]),
        .library(name: "KinetraceHost", targets: ["KinetraceHost"]),
        .library(name: "KinetraceConformance", targets: ["KinetraceConformance"]),
        // No public API: `package` declarations only, for Kinetrace's own benchmark package,
        // which builds as part of this package (Benchmarks/Package.swift).
        .library(name: "KinetraceSupport", targets: ["KinetraceSupport"]),
        .library(name: "KinetraceTrace", targets: ["KinetraceTrace"]),
        .library(name: "KinetracePcap", targets: ["KinetracePcap"]),
        .library(name: "KinetraceReplay", targets: ["KinetraceReplay"]),
        .library(name: "KinetraceSimulation", targets: ["KinetraceSimulation"]),
        .library(name: "KinetraceGestures", targets: ["KinetraceGestures"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // `swift package generate-documentation`: the DocC catalogues of the public libraries (CI builds them).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The self-signed certificate's P-256 key (CONTRIBUTING.md, Dependencies).
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        // TLS for wss:// (CONTRIBUTING.md, Dependencies), and the self-signed certificate it serves by default.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
    ],
    targets: [
        // 1. Support
        // One C function Swift cannot call itself (variadic prctl).
        .target(name: "CKinetraceSystem", path: "Sources/Support/CKinetraceSystem"),
        .target(
            name: "KinetraceSupport",
            dependencies: [
                "CKinetraceSystem",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Sources/Support/KinetraceSupport", swiftSettings: strict),
        .target(name: "KinetraceJSON", path: "Sources/Support/KinetraceJSON", swiftSettings: strict),
        // SHA-256 for declaration digests: pure, no imports at all.
        .target(name: "KinetraceHash", path: "Sources/Support/KinetraceHash", swiftSettings: strict),
        // The JUnit XML report conform, gestures eval and replay share: text building only.
        .target(name: "KinetraceJUnit", path: "Sources/Support/KinetraceJUnit", swiftSettings: strict),
        // 2. Wire
        .target(name: "KinetraceWire", dependencies: ["KinetraceJSON", "KinetraceHash"], path: "Sources/Wire/KinetraceWire", swiftSettings: strict),
        // RFC 6455 frames, messages and the opening handshake's head: pure, no imports at all.
        .target(name: "KinetraceWebSocket", path: "Sources/Wire/KinetraceWebSocket", swiftSettings: strict),
        // 3. Formats
        .target(
            name: "KinetraceTrace",
            dependencies: [
                "KinetraceWire", "KinetraceJSON", "KinetraceSupport", "CZlib", "CZstd",
            ],
            path: "Sources/Formats/KinetraceTrace", swiftSettings: strict),
        .systemLibrary(
            name: "CZlib", path: "Sources/Formats/CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]),
        .systemLibrary(
            name: "CZstd", path: "Sources/Formats/CZstd", pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"]), .brew(["zstd"])]),
        .systemLibrary(
            name: "CQRencode", path: "Sources/Support/CQRencode", pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"]), .brew(["qrencode"])]),
        .target(name: "KinetraceQR", dependencies: ["CQRencode"], path: "Sources/Support/KinetraceQR", swiftSettings: strict),
        .systemLibrary(
            name: "CPcap", path: "Sources/Formats/CPcap", pkgConfig: "libpcap",
            providers: [.apt(["libpcap-dev"]), .brew(["libpcap"])]),
        .target(
            name: "KinetracePcap",
            dependencies: ["KinetraceWire", "KinetraceWebSocket", "KinetraceJSON", "KinetraceTrace", "KinetraceSupport", "CPcap"],
            path: "Sources/Formats/KinetracePcap", swiftSettings: strict),
        // 4. Transport
        // The carriers (UDP, TCP) behind one seam: a controller's connection, a host's listener.
        .target(
            name: "KinetraceTransport",
            dependencies: [
                "KinetraceWire", "KinetraceTrace", "KinetraceSupport", "KinetraceJSON", "KinetraceWebSocket", "KinetraceHash",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Transport/KinetraceTransport", swiftSettings: strict),
        // TLS for wss://, plugged into the transports at run time: only the command links it,
        // so the libraries (KinetraceHost, KinetraceConformance) build no TLS stack.
        .target(
            name: "KinetraceTLS",
            dependencies: [
                "KinetraceTransport", "KinetraceTrace",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Sources/Transport/KinetraceTLS", swiftSettings: strict),
        // What a network does to messages, and the planner that applies it: pure, no sockets.
        .target(
            name: "KinetraceImpairment",
            dependencies: [
                "KinetraceWire", "KinetraceTrace", "KinetraceSupport", "KinetraceJSON",
                .product(name: "HeapModule", package: "swift-collections"),
            ],
            path: "Sources/Transport/KinetraceImpairment", swiftSettings: strict),
        // 5. Engines
        .target(
            name: "KinetraceAnalysis",
            dependencies: [
                "KinetraceWire", "KinetraceTrace", "KinetraceSupport", "KinetraceJSON",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Sources/Engines/KinetraceAnalysis", swiftSettings: strict),
        // Pure SVG charts (no I/O), shared by `kinetrace latency` and the conformance report.
        .target(name: "KinetracePlot", path: "Sources/Engines/KinetracePlot", swiftSettings: strict),
        // Gesture detectors and their scoring against labelled traces (no I/O beyond reading a trace).
        .target(
            name: "KinetraceGestures",
            dependencies: ["KinetraceWire", "KinetraceTrace", "KinetraceSupport", "KinetraceJSON"],
            path: "Sources/Engines/KinetraceGestures", swiftSettings: strict),
        .target(
            name: "KinetraceSimulation",
            dependencies: [
                "KinetraceWire", "KinetraceTrace", "KinetraceSupport", "KinetraceJSON",
                .product(name: "HeapModule", package: "swift-collections"),
            ],
            path: "Sources/Engines/KinetraceSimulation", swiftSettings: strict),
        .target(
            name: "KinetraceHost",
            dependencies: [
                "KinetraceWire", "KinetraceTrace", "KinetraceSupport", "KinetraceJSON", "KinetraceTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Engines/KinetraceHost", swiftSettings: strict),
        .target(
            name: "KinetracePhone",
            dependencies: [
                "KinetraceWire", "KinetraceTrace", "KinetraceSupport", "KinetraceJSON", "KinetraceTransport", "KinetraceHost",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Engines/KinetracePhone", swiftSettings: strict),
        .target(
            name: "KinetraceController",
            dependencies: [
                "KinetraceWire", "KinetraceTrace", "KinetraceSupport", "KinetraceJSON", "KinetraceSimulation", "KinetraceTransport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Engines/KinetraceController", swiftSettings: strict),
        .target(
            name: "KinetraceReplay",
            dependencies: [
                "KinetraceWire", "KinetraceTrace", "KinetracePcap", "KinetraceSupport", "KinetraceJSON", "KinetraceTransport", "KinetraceImpairment",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Engines/KinetraceReplay", swiftSettings: strict),
        .target(
            name: "KinetraceConformance",
            dependencies: ["KinetraceWire", "KinetraceTrace", "KinetraceSupport", "KinetraceJSON", "KinetraceTransport", "KinetraceImpairment"],
            path: "Sources/Engines/KinetraceConformance", swiftSettings: strict),
        .target(
            name: "KinetraceCapture",
            dependencies: [
                "KinetraceWire", "KinetraceTrace", "KinetracePcap", "KinetraceSupport", "CPcap",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Engines/KinetraceCapture", swiftSettings: strict),
        // 6. CLI
        .target(
            name: "KinetraceCLI",
            dependencies: [
                "KinetraceSupport", "KinetraceJSON", "KinetraceHash", "KinetraceWire", "KinetraceTrace", "KinetracePcap", "KinetraceAnalysis", "KinetraceSimulation",
                "KinetraceHost", "KinetraceController", "KinetraceCapture", "KinetraceReplay", "KinetraceTransport", "KinetraceImpairment",
                "KinetraceConformance", "KinetracePlot", "KinetraceGestures", "KinetraceJUnit", "KinetraceTLS",
                "KinetracePhone", "KinetraceQR",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Sources/CLI/KinetraceCLI", swiftSettings: strict),
        .executableTarget(
            name: "kinetrace", dependencies: ["KinetraceCLI"],
            path: "Sources/CLI/kinetrace", swiftSettings: strict),
        // `make install`'s man pages, from `kinetrace --experimental-dump-help`: Foundation only.
        .executableTarget(
            name: "kinetrace-manual",
            path: "Sources/CLI/kinetrace-manual", swiftSettings: strict),

        // Tests, one target per layer, plus the process helpers they share.
        .target(
            name: "KinetraceTestSupport",
            dependencies: ["KinetraceSupport", "KinetraceWire", .product(name: "PropertyBased", package: "swift-property-based")],
            path: "Tests/KinetraceTestSupport", swiftSettings: strict),
        .testTarget(
            name: "KinetraceWireTests",
            dependencies: ["KinetraceSupport", "KinetraceJSON", "KinetraceHash", "KinetraceWire", "KinetraceWebSocket", "KinetraceTestSupport", .product(name: "PropertyBased", package: "swift-property-based"),
                           .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOWebSocket", package: "swift-nio")],
            swiftSettings: strict),
        .testTarget(
            name: "KinetraceTraceTests",
            dependencies: [
                "KinetraceSupport", "KinetraceJSON", "KinetraceTrace", "KinetraceWire", "KinetraceTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "KinetracePcapTests",
            dependencies: ["KinetraceSupport", "KinetraceJSON", "KinetracePcap", "KinetraceTrace", "KinetraceWire", "CPcap", "KinetraceTestSupport"],
            exclude: ["Fixtures"],
            swiftSettings: strict),
        .testTarget(
            name: "KinetraceLiveTests",
            dependencies: ["KinetraceSupport", "KinetraceJSON", "KinetraceHost", "KinetraceConformance", "KinetraceController", "KinetraceSimulation", "KinetraceCapture", "KinetracePcap", "KinetraceTrace", "KinetraceWire",
                           "KinetraceTransport", "KinetraceImpairment", "KinetraceWebSocket", "KinetraceCLI", "KinetraceTLS", "KinetraceTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "KinetraceReplayTests",
            dependencies: ["KinetraceSupport", "KinetraceJSON", "KinetraceReplay", "KinetraceImpairment", "KinetraceTransport", "KinetraceSimulation", "KinetraceTrace", "KinetraceWire", "KinetraceTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "KinetraceConformanceTests",
            dependencies: ["KinetraceSupport", "KinetraceJSON", "KinetraceConformance", "KinetraceHost", "KinetraceTrace", "KinetraceWire", "KinetraceReplay",
                           "KinetraceImpairment", "KinetraceTransport", "KinetraceTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "KinetraceDissectorTests",
            dependencies: ["KinetraceSupport", "KinetraceJSON", "KinetraceTrace", "KinetraceWire", "KinetraceTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "KinetraceEngineTests",
            dependencies: ["KinetraceSupport", "KinetraceJSON", "KinetraceAnalysis", "KinetraceSimulation", "KinetraceGestures", "KinetraceTrace", "KinetraceWire", "KinetraceTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "KinetracePlotTests",
            dependencies: ["KinetracePlot", "KinetraceTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "KinetraceCLITests",
            dependencies: ["KinetraceSupport", "KinetraceJSON", "KinetraceJUnit", "KinetraceCLI", "KinetraceConformance", "KinetraceReplay", "KinetraceImpairment", "KinetraceTransport", "KinetraceHost", "KinetraceController", "KinetraceAnalysis", "KinetraceTrace", "KinetraceWire", "KinetraceQR", "KinetraceTestSupport"],
            exclude: ["Golden", "Schemas"],
            swiftSettings: strict),
    ]
)

// swift-tools-version:6.1
// A host's own package that runs Kinetrace's conformance suite inside its `swift test`:
// the pattern for a game that embeds a MotionLink host. It depends on Kinetrace by path.
import PackageDescription

let package = Package(
    name: "MyGameHost",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "Kinetrace", path: "../.."),
    ],
    targets: [
        // The game's host: here a thin wrapper round Kinetrace's host core, standing in for yours.
        .target(name: "MyGameHost", dependencies: [
            .product(name: "KinetraceHost", package: "Kinetrace"),
            .product(name: "KinetraceWire", package: "Kinetrace"),
        ]),
        .testTarget(name: "MyGameHostTests", dependencies: [
            "MyGameHost",
            .product(name: "KinetraceConformance", package: "Kinetrace"),
            .product(name: "KinetraceWire", package: "Kinetrace"),
        ]),
    ]
)

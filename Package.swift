// swift-tools-version: 6.1
import PackageDescription

/// Settings every target gets (strict, Swift 6 mode; see swift-log's Package.swift for the model).
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "MBaaSKit",
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .watchOS(.v8)],
    products: [
        .library(name: "MBaaSCore", targets: ["MBaaSCore"]),
        .library(name: "MBaaSReplay", targets: ["MBaaSReplay"]),
        .library(name: "MBaaSConformance", targets: ["MBaaSConformance"]),
        .library(name: "MBaaSMigration", targets: ["MBaaSMigration"]),
        .library(name: "MBaaSLocal", targets: ["MBaaSLocal"]),
        .library(name: "MBaaSPocketBase", targets: ["MBaaSPocketBase"]),
        .library(name: "MBaaSNCMB", targets: ["MBaaSNCMB"]),
        .library(name: "MBaaSKii", targets: ["MBaaSKii"]),
        .library(name: "MBaaSAppPot", targets: ["MBaaSAppPot"]),
        .executable(name: "mbaas", targets: ["mbaas"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    ],
    targets: [
        // MARK: Core and tooling modules
        .target(
            name: "MBaaSCore",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ],
            path: "Sources/MBaaSCore"
        ),
        .target(
            name: "MBaaSReplay",
            dependencies: ["MBaaSCore"],
            path: "Sources/MBaaSReplay"
        ),
        .target(
            name: "MBaaSConformance",
            dependencies: ["MBaaSCore", "MBaaSReplay", .product(name: "Crypto", package: "swift-crypto")],
            path: "Sources/MBaaSConformance"
        ),
        .target(
            name: "MBaaSMigration",
            dependencies: [
                "MBaaSCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Sources/MBaaSMigration"
        ),
        .executableTarget(
            name: "mbaas",
            dependencies: [
                "MBaaSCore", "MBaaSReplay", "MBaaSConformance", "MBaaSMigration",
                "MBaaSLocal", "MBaaSPocketBase", "MBaaSNCMB", "MBaaSKii", "MBaaSAppPot",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/mbaas"
        ),

        // MARK: Adapters (each imports only the core)
        .target(
            name: "MBaaSLocal",
            dependencies: [
                "MBaaSCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            path: "Adapters/Local"
        ),
        .target(
            name: "MBaaSPocketBase",
            dependencies: ["MBaaSCore"],
            path: "Adapters/PocketBase"
        ),
        .target(
            name: "MBaaSNCMB",
            dependencies: ["MBaaSCore", .product(name: "Crypto", package: "swift-crypto")],
            path: "Adapters/NCMB"
        ),
        .target(
            name: "MBaaSKii",
            dependencies: ["MBaaSCore"],
            path: "Adapters/Kii"
        ),
        .target(
            name: "MBaaSAppPot",
            dependencies: ["MBaaSCore"],
            path: "Adapters/AppPot"
        ),

        // MARK: Tests (one target per module)
        .testTarget(name: "MBaaSCoreTests", dependencies: ["MBaaSCore"]),
        .testTarget(name: "MBaaSReplayTests", dependencies: ["MBaaSCore", "MBaaSReplay"]),
        .testTarget(
            name: "MBaaSConformanceTests",
            dependencies: [
                "MBaaSCore", "MBaaSReplay", "MBaaSConformance",
                "MBaaSLocal", "MBaaSPocketBase", "MBaaSNCMB", "MBaaSKii", "MBaaSAppPot",
            ]
        ),
        .testTarget(name: "MBaaSLocalTests", dependencies: ["MBaaSCore", "MBaaSLocal"]),
        .testTarget(
            name: "MBaaSMigrationTests",
            dependencies: ["MBaaSCore", "MBaaSReplay", "MBaaSMigration", "MBaaSLocal", "MBaaSNCMB", "MBaaSPocketBase"]),
        .testTarget(
            name: "MBaaSPocketBaseTests", dependencies: ["MBaaSCore", "MBaaSReplay", "MBaaSConformance", "MBaaSPocketBase"]),
        .testTarget(
            name: "MBaaSNCMBTests",
            dependencies: [
                "MBaaSCore", "MBaaSReplay", "MBaaSConformance", "MBaaSNCMB",
                // The simulator checks request signatures with its own HMAC code, not the adapter's signer.
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(name: "MBaaSKiiTests", dependencies: ["MBaaSCore", "MBaaSReplay", "MBaaSConformance", "MBaaSKii"]),
        .testTarget(name: "MBaaSAppPotTests", dependencies: ["MBaaSCore", "MBaaSReplay", "MBaaSConformance", "MBaaSAppPot"]),
        // Depends on the executable so that `swift test` builds the `mbaas` binary the CLI tests run.
        .testTarget(name: "mbaasTests", dependencies: ["MBaaSCore", "MBaaSReplay", "MBaaSMigration", "MBaaSNCMB", "mbaas"]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + strict
}

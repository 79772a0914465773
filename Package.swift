// swift-tools-version: 6.1
import PackageDescription

/// Settings every target gets (strict, Swift 6 mode; see swift-log's Package.swift for the model).
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "MBaaSKit",
    // The minimums are what the code calls (docs/platforms.md lists each API): Mutex and TaskExecutor, and
    // String(validating:as:), are macOS 15 / iOS 18 / tvOS 18 / watchOS 11.
    platforms: [.iOS(.v18), .macOS(.v15), .tvOS(.v18), .watchOS(.v11)],
    products: [
        .library(name: "MBaaSCore", targets: ["MBaaSCore"]),
        .library(name: "MBaaSReplay", targets: ["MBaaSReplay"]),
        .library(name: "MBaaSConformance", targets: ["MBaaSConformance"]),
        .library(name: "MBaaSMigration", targets: ["MBaaSMigration"]),
        .library(name: "MBaaSTesting", targets: ["MBaaSTesting"]),
        .library(name: "MBaaSExampleAdapter", targets: ["MBaaSExampleAdapter"]),
        .library(name: "MBaaSLocal", targets: ["MBaaSLocal"]),
        .library(name: "MBaaSPocketBase", targets: ["MBaaSPocketBase"]),
        .library(name: "MBaaSParseFamilyWire", targets: ["MBaaSParseFamilyWire"]),
        .library(name: "MBaaSNCMBWire", targets: ["MBaaSNCMBWire"]),
        .library(name: "MBaaSNCMB", targets: ["MBaaSNCMB"]),
        .library(name: "MBaaSKiiWire", targets: ["MBaaSKiiWire"]),
        .library(name: "MBaaSParseWire", targets: ["MBaaSParseWire"]),
        .library(name: "MBaaSParse", targets: ["MBaaSParse"]),
        .library(name: "MBaaSKii", targets: ["MBaaSKii"]),
        .library(name: "MBaaSAppPotWire", targets: ["MBaaSAppPotWire"]),
        .library(name: "MBaaSAppPot", targets: ["MBaaSAppPot"]),
        .library(name: "MBaaSSalesforceWire", targets: ["MBaaSSalesforceWire"]),
        .library(name: "MBaaSSalesforce", targets: ["MBaaSSalesforce"]),
        .library(name: "MBaaSEmulator", targets: ["MBaaSEmulator"]),
        .library(name: "MBaaSSync", targets: ["MBaaSSync"]),
        .library(name: "MBaaSPostgres", targets: ["MBaaSPostgres"]),
        .executable(name: "mbaas", targets: ["mbaas"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // The emulator's server. No traits: swift-configuration and the full-Foundation extras are not needed.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // The PostgreSQL backend's client (connection pool, extended protocol with bound parameters).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // The emulator over HTTPS (`mbaas serve --tls-…`): HummingbirdTLS on swift-nio-ssl, certificates written with
        // swift-certificates (P-256 keys from swift-crypto).
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        // The event loops Hummingbird and postgres-nio already run on, as Swift concurrency's executor for `mbaas serve`.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
    ],
    targets: [
        // MARK: Core and tooling modules
        .target(
            name: "MBaaSCore",
            dependencies: [
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OrderedCollections", package: "swift-collections"),
                // Server stores' shared secrets (ServerStore+Secrets.swift): random ids, token digests, scrypt.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
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
            path: "Sources/MBaaSConformance",
            // The scenarios ship with the module (Bundle.module); Fixtures/Scenarios is a link to them.
            resources: [.copy("Scenarios")]
        ),
        // Test doubles for every test target here and for third-party adapters' tests.
        .target(name: "MBaaSTesting", dependencies: ["MBaaSCore"], path: "Sources/MBaaSTesting"),
        // The example adapter of "Writing an adapter", and public helpers for the rules the suite enforces.
        .target(name: "MBaaSExampleAdapter", dependencies: ["MBaaSCore"], path: "Sources/MBaaSExampleAdapter"),
        .target(
            name: "MBaaSMigration",
            dependencies: [
                "MBaaSCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            path: "Sources/MBaaSMigration"
        ),
        .target(
            name: "MBaaSEmulator",
            dependencies: [
                "MBaaSCore", "MBaaSNCMBWire", "MBaaSKiiWire", "MBaaSAppPotWire", "MBaaSParseWire",
                "MBaaSSalesforceWire",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/MBaaSEmulator"
        ),
        // The one list of built-in adapters and dialects (the CLI, serve, bench and the conformance columns read it).
        .target(
            name: "MBaaSBuiltins",
            dependencies: [
                "MBaaSCore", "MBaaSMigration", "MBaaSEmulator",
                "MBaaSLocal", "MBaaSPocketBase", "MBaaSNCMB", "MBaaSKii", "MBaaSAppPot", "MBaaSParse", "MBaaSPostgres",
                "MBaaSSalesforce",
            ],
            path: "Sources/MBaaSBuiltins"
        ),
        // Offline replicas of any backend (a Local store in front of a remote, synced).
        .target(
            name: "MBaaSSync",
            dependencies: [
                "MBaaSCore", "MBaaSLocal",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Sources/MBaaSSync"
        ),
        .executableTarget(
            name: "mbaas",
            dependencies: [
                "MBaaSBuiltins",
                "MBaaSCore", "MBaaSReplay", "MBaaSConformance", "MBaaSMigration", "MBaaSEmulator",
                "MBaaSLocal", "MBaaSPostgres", "MBaaSPocketBase", "MBaaSNCMB", "MBaaSKii", "MBaaSAppPot", "MBaaSParse", "MBaaSSync",
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
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
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
            name: "MBaaSPostgres",
            dependencies: [
                "MBaaSCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Adapters/Postgres"
        ),
        // The Parse family's one wire core (values, __type, __op values, records, results), parameterised by each
        // vendor's rules; NCMB's and Parse's Wire modules import and re-export it.
        .target(name: "MBaaSParseFamilyWire", dependencies: ["MBaaSCore"], path: "Adapters/ParseFamily/Wire"),
        // Each HTTP vendor: a pure, two-way Wire module (the client and the emulator's dialect share it) and a client.
        .target(
            name: "MBaaSNCMBWire",
            dependencies: ["MBaaSCore", "MBaaSParseFamilyWire", .product(name: "Crypto", package: "swift-crypto")],
            path: "Adapters/NCMB/Wire"
        ),
        .target(
            name: "MBaaSNCMB",
            dependencies: ["MBaaSCore", "MBaaSNCMBWire", .product(name: "Crypto", package: "swift-crypto")],
            path: "Adapters/NCMB",
            exclude: ["Wire"]
        ),
        .target(
            name: "MBaaSParseWire",
            dependencies: ["MBaaSCore", "MBaaSParseFamilyWire"],
            path: "Adapters/Parse/Wire"
        ),
        .target(
            name: "MBaaSParse",
            dependencies: ["MBaaSCore", "MBaaSParseWire"],
            path: "Adapters/Parse",
            exclude: ["Wire"]
        ),
        .target(
            name: "MBaaSKiiWire",
            dependencies: ["MBaaSCore"],
            path: "Adapters/Kii/Wire"
        ),
        .target(
            name: "MBaaSKii",
            dependencies: ["MBaaSCore", "MBaaSKiiWire"],
            path: "Adapters/Kii",
            exclude: ["Wire"]
        ),
        .target(
            name: "MBaaSAppPotWire",
            dependencies: ["MBaaSCore"],
            path: "Adapters/AppPot/Wire"
        ),
        .target(
            name: "MBaaSAppPot",
            dependencies: ["MBaaSCore", "MBaaSAppPotWire"],
            path: "Adapters/AppPot",
            exclude: ["Wire"]
        ),
        .target(
            name: "MBaaSSalesforceWire",
            dependencies: ["MBaaSCore"],
            path: "Adapters/Salesforce/Wire"
        ),
        .target(
            name: "MBaaSSalesforce",
            dependencies: ["MBaaSCore", "MBaaSSalesforceWire"],
            path: "Adapters/Salesforce",
            exclude: ["Wire"]
        ),

        // MARK: Tests (one target per module)
        .testTarget(name: "MBaaSCoreTests", dependencies: ["MBaaSCore"]),
        .testTarget(name: "MBaaSReplayTests", dependencies: ["MBaaSCore", "MBaaSReplay", "MBaaSTesting"]),
        .testTarget(
            name: "MBaaSConformanceTests",
            dependencies: [
                "MBaaSCore", "MBaaSReplay", "MBaaSConformance", "MBaaSExampleAdapter", "MBaaSBuiltins",
                "MBaaSLocal", "MBaaSPocketBase", "MBaaSNCMB", "MBaaSKii", "MBaaSAppPot", "MBaaSParse", "MBaaSTesting",
            ]
        ),
        .testTarget(name: "MBaaSLocalTests", dependencies: ["MBaaSCore", "MBaaSLocal", "MBaaSTesting"]),
        .testTarget(
            name: "MBaaSMigrationTests",
            dependencies: [
                "MBaaSCore", "MBaaSReplay", "MBaaSMigration", "MBaaSLocal", "MBaaSNCMB", "MBaaSPocketBase", "MBaaSTesting",
                .product(name: "GRDB", package: "GRDB.swift"),   // to change the state database behind a test's back
            ]),
        .testTarget(
            name: "MBaaSPocketBaseTests", dependencies: ["MBaaSCore", "MBaaSReplay", "MBaaSConformance", "MBaaSPocketBase", "MBaaSTesting"]),
        .testTarget(
            name: "MBaaSNCMBTests",
            dependencies: [
                "MBaaSCore", "MBaaSReplay", "MBaaSConformance", "MBaaSNCMB", "MBaaSTesting",
                // The simulator checks request signatures with its own HMAC code, not the adapter's signer.
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "MBaaSPostgresTests",
            dependencies: [
                "MBaaSCore", "MBaaSConformance", "MBaaSPostgres", "MBaaSMigration", "MBaaSNCMB", "MBaaSLocal", "MBaaSTesting",
                // To look at the database behind the backend's back (the tables, a foreign schema, a dropped schema).
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]),
        .testTarget(name: "MBaaSParseTests", dependencies: ["MBaaSCore", "MBaaSParse", "MBaaSTesting"]),
        .testTarget(name: "MBaaSKiiTests", dependencies: ["MBaaSCore", "MBaaSReplay", "MBaaSConformance", "MBaaSKiiWire", "MBaaSKii", "MBaaSTesting"]),
        .testTarget(name: "MBaaSSalesforceTests", dependencies: ["MBaaSCore", "MBaaSReplay", "MBaaSConformance", "MBaaSSalesforceWire", "MBaaSSalesforce", "MBaaSTesting"]),
        .testTarget(name: "MBaaSAppPotTests", dependencies: ["MBaaSCore", "MBaaSReplay", "MBaaSConformance", "MBaaSAppPot", "MBaaSTesting"]),
        .testTarget(
            name: "MBaaSEmulatorTests",
            dependencies: [
                "MBaaSCore", "MBaaSReplay", "MBaaSConformance", "MBaaSEmulator", "MBaaSLocal", "MBaaSNCMBWire", "MBaaSNCMB",
                "MBaaSKiiWire", "MBaaSKii", "MBaaSMigration", "MBaaSPocketBase", "MBaaSTesting", "MBaaSAppPotWire",
                "MBaaSAppPot", "MBaaSParseWire", "MBaaSParse", "MBaaSSalesforceWire", "MBaaSSalesforce",
            ]
        ),
        .testTarget(
            name: "MBaaSSyncTests",
            dependencies: [
                "MBaaSCore", "MBaaSSync", "MBaaSLocal", "MBaaSReplay", "MBaaSConformance", "MBaaSEmulator", "MBaaSParse",
                "MBaaSTesting", .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // Depends on the executable so that `swift test` builds the `mbaas` binary the CLI tests run.
        // ArgumentParser: ReadmeLinkTests parses the README's commands with the CLI's own parser.
        .testTarget(name: "mbaasTests", dependencies: ["MBaaSCore", "MBaaSReplay", "MBaaSMigration", "MBaaSNCMB", "MBaaSTesting", "MBaaSEmulator", "MBaaSPostgres", "mbaas",
                                                        .product(name: "ArgumentParser", package: "swift-argument-parser")]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + strict
}
